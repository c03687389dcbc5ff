// Package protocol is the Go driver's side of conform's driver protocol
// (harness/driver/PROTOCOL.md): commands in on one stream, replies and
// events out on another, one JSON object per line.
package protocol

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc/balancer"
)

// Options say what the driver puts under test.
type Options struct {
	// Impl and Version are what hello reports. Default: "grpc-go" and the
	// grpc-go version linked into the binary.
	Impl, Version string
	// ServiceConfig, if set, rewrites the service config of create before
	// the channel is built (the reference wraps its policy in the recorder).
	ServiceConfig func(sc string) (string, error)
	// RPCIDKey, if set, is a metadata key every RPC carries with its rpc
	// id as value (the recorder names picks by it).
	RPCIDKey string
	// Can adds capabilities to hello's (the reference's configuration
	// extensions, say).
	Can map[string]bool
	// Policies are the LB policies (standard names) hello lists. Default:
	// those of KnownPolicies that this grpc-go has registered.
	Policies []string
	// Endpoint, if set, builds an endpoint from its addresses and the
	// scenario's endpoint attributes (the reference's hierarchy paths).
	// Without it, attributes are refused.
	Endpoint EndpointFunc
}

// KnownPolicies are the standard LB policy names conform's scenarios use.
var KnownPolicies = []string{
	"pick_first", "round_robin", "ring_hash_experimental", "weighted_target_experimental",
	"priority_experimental", "outlier_detection_experimental", "xds_override_host_experimental",
	"least_request_experimental", "weighted_round_robin",
}

// command is one line from conform.
type command struct {
	ID            int64               `json:"id"`
	Op            string              `json:"op"`
	Target        string              `json:"target"`
	ServiceConfig string              `json:"service_config"`
	Endpoints     [][]string          `json:"endpoints"`
	Attributes    []map[string]string `json:"attributes"`
	RPC           string              `json:"rpc"`
	Method        string              `json:"method"`
	WaitForReady  bool                `json:"wait_for_ready"`
	DeadlineMS    int64               `json:"deadline_ms"`
	Metadata      map[string]string   `json:"metadata"`
	IdleTimeoutMS int64               `json:"idle_timeout_ms"`
}

// Session is one driver run: the protocol loop and its channel.
type Session struct {
	opts  Options
	outMu sync.Mutex
	out   io.Writer
	ch    *channel // nil before create
}

// NewSession returns a session writing its lines to out.
func NewSession(out io.Writer, opts Options) *Session {
	if opts.Impl == "" {
		opts.Impl = "grpc-go"
	}
	if opts.Version == "" {
		opts.Version = GRPCVersion()
	}
	return &Session{opts: opts, out: out}
}

// GRPCVersion is the version of grpc-go linked into this binary.
func GRPCVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == "google.golang.org/grpc" {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// Serve handles commands from in until close or EOF, and returns the exit
// status: 0 when the session ended as the protocol says.
func (s *Session) Serve(in io.Reader) int {
	stop := make(chan struct{})
	watched := s.watchStalls(stop)
	defer func() { close(stop); <-watched }()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var c command
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			s.emit(map[string]any{"ev": "error", "err": fmt.Sprintf("malformed command: %v", err)})
			continue
		}
		if c.Op == "close" {
			s.closeChannel()
			s.reply(c.ID, nil, nil)
			return 0
		}
		extra, err := s.handle(c)
		s.reply(c.ID, extra, err)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "reading commands: %v\n", err)
	}
	s.closeChannel()
	return 0
}

func (s *Session) handle(c command) (map[string]any, error) {
	switch c.Op {
	case "hello":
		return map[string]any{"hello": s.hello()}, nil
	case "create":
		return nil, s.create(c.Target, c.ServiceConfig, time.Duration(c.IdleTimeoutMS)*time.Millisecond)
	case "resolve":
		if s.ch == nil {
			return nil, fmt.Errorf("resolve before create")
		}
		return nil, s.ch.resolve(c.Endpoints, c.Attributes, s.opts.Endpoint)
	case "config":
		if s.ch == nil {
			return nil, fmt.Errorf("config before create")
		}
		sc, err := s.rewrite(c.ServiceConfig)
		if err != nil {
			return nil, err
		}
		return nil, s.ch.config(sc)
	case "rpc":
		if s.ch == nil {
			return nil, fmt.Errorf("rpc before create")
		}
		return nil, s.ch.startRPC(c)
	}
	return nil, fmt.Errorf("unknown op %q", c.Op)
}

func (s *Session) hello() map[string]any {
	can := map[string]bool{
		"endpoints": hasEndpoints, "mixed_families": true, "service_config": true,
		// shuffleAddressList is claimed only where it is on by default (v1.58+),
		// and pick_first through xDS (A62) with it.
		"shuffle": hasEndpoints, "wait_for_ready": true, "xds": false, "xds_pick_first": hasEndpoints,
		// channel.go links grpc-go's health package: a healthCheckConfig
		// in the service config turns client-side health checking on.
		"health_check": true,
		// ring_hash's request hash header (A76), where this grpc-go keeps it.
		"request_hash_header": takesRequestHashHeader(),
		// stall.go: this process's stalls are reported as stall events.
		"stall_watch": true,
		// config: a new service config through the manual resolver.
		"config_update": true,
		// create's idle_timeout_ms, as grpc-go's WithIdleTimeout.
		"idle_timeout": hasIdleTimeout,
	}
	for k, v := range s.opts.Can {
		can[k] = v
	}
	policies := s.opts.Policies
	if policies == nil {
		for _, name := range KnownPolicies {
			if balancer.Get(name) != nil {
				policies = append(policies, name)
			}
		}
	}
	return map[string]any{
		"protocol": 1,
		"impl":     s.opts.Impl,
		"version":  s.opts.Version,
		"can":      can,
		"policies": policies,
		"observes": "every-change",
	}
}

func (s *Session) create(target, serviceConfig string, idle time.Duration) error {
	if s.ch != nil {
		return fmt.Errorf("a channel exists already")
	}
	if idle < 0 {
		return fmt.Errorf("idle_timeout_ms must not be negative")
	}
	if idle > 0 && !hasIdleTimeout {
		return fmt.Errorf("this grpc-go has no WithIdleTimeout (v1.56 on; the driver's legacy build leaves it out): idle_timeout_ms cannot be set")
	}
	serviceConfig, err := s.rewrite(serviceConfig)
	if err != nil {
		return err
	}
	ch, err := newChannel(target, serviceConfig, idle, s.opts.RPCIDKey, s.emit)
	if err != nil {
		return err
	}
	s.ch = ch
	return nil
}

// rewrite is Options.ServiceConfig applied to sc, if set.
func (s *Session) rewrite(sc string) (string, error) {
	if s.opts.ServiceConfig == nil {
		return sc, nil
	}
	return s.opts.ServiceConfig(sc)
}

func (s *Session) closeChannel() {
	if s.ch != nil {
		s.ch.close()
	}
}

// reply writes a command's ok (with extra fields) or error.
func (s *Session) reply(id int64, extra map[string]any, err error) {
	m := map[string]any{"id": id, "ev": "ok"}
	if err != nil {
		m["ev"], m["err"] = "error", err.Error()
	}
	for k, v := range extra {
		m[k] = v
	}
	s.emit(m)
}

// Policy writes a policy event: ev is a trace event object without "t".
func (s *Session) Policy(ev json.RawMessage) {
	s.emit(map[string]any{"ev": "policy", "event": ev})
}

// emit writes one line; lines never interleave.
func (s *Session) emit(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"ev": "error", "err": "encoding a line: " + err.Error()})
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	if _, err := s.out.Write(append(b, '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "writing a line: %v\n", err)
	}
}
