// Package xdsserver is the lab's xDS management server: go-control-plane's
// snapshot cache and its aggregated discovery service (ADS, state of the
// world), opened inside a lab namespace on the service addresses
// ServiceAddrV4 and ServiceAddrV6, port Port, and reporting every request it
// receives (Event) so that a client's ACKs and NACKs are evidence whatever
// language the client is written in.
//
// Every client sees one state of the world, whatever its node id: the
// resources given to SetResources. A client reaches the server from the host
// it was started in (usually client0) through a bootstrap naming ServerURI
// (Bootstrap).
//
// Two departures from go-control-plane's defaults, both for gRPC clients:
// the cache runs in non-ADS mode (in ADS mode it answers a request only when
// it names every resource of the type, and gRPC clients subscribe to
// clusters one by one); and a NACK does not make the server send the
// rejected version again (go-control-plane would, at once and for ever):
// the server answers again only when SetResources changes the type.
//
// netlab knows nothing of the harness: Event is this package's own type,
// and the harness converts it to trace events.
package xdsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/conformlab/conform/netlab"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	xds "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock that stamps events, for example the lab's
// (netlab.Lab.Now). Default: time since Start.
func WithClock(now func() time.Duration) Option { return func(s *Server) { s.now = now } }

// WithEventHook calls f with every event, synchronously, on the stream's
// goroutine, in the order the stream saw them; f must not block.
func WithEventHook(f func(Event)) Option { return func(s *Server) { s.hook = f } }

// WithLogger sets the logger for go-control-plane's messages (debug and up)
// and the server's own. Default: none.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// Server is a running management server. Its methods may be called from
// any goroutine.
type Server struct {
	now  func() time.Duration
	hook func(Event)
	log  *slog.Logger

	lns         []net.Listener
	removeAddrs func() error // the service addresses, from host's loopback
	grpc        *grpc.Server
	cache       cache.SnapshotCache
	ctx         context.Context
	stop        context.CancelFunc
	serve       sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	state   cache.Snapshot              // the state of the world, per type
	events  []Event                     // every event so far
	changed chan struct{}               // closed and replaced when events grows
	sent    map[int64]map[string]string // stream → nonce → version sent with it
	nodes   map[int64]string            // stream → node id
}

// nodeKey is the one snapshot every client reads (see allNodes).
const nodeKey = "conform"

// allNodes gives every node the same snapshot.
type allNodes struct{}

func (allNodes) ID(*core.Node) string { return nodeKey }

// Start opens the server inside host's namespace (usually "client0"): it
// adds the service addresses to the namespace's loopback and serves ADS on
// both, port Port. Until SetResources is called the server answers nothing.
func Start(ns netlab.Namespaces, host string, opts ...Option) (*Server, error) {
	start := time.Now()
	s := &Server{
		now:     func() time.Duration { return time.Since(start) },
		changed: make(chan struct{}),
		sent:    map[int64]map[string]string{},
		nodes:   map[int64]string{},
	}
	for _, o := range opts {
		o(s)
	}
	lns, removeAddrs, err := listenIn(ns, host)
	if err != nil {
		return nil, err
	}
	s.lns, s.removeAddrs = lns, removeAddrs
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.cache = cache.NewSnapshotCache(false, allNodes{}, logAdapter(s.log))
	cbs := xds.CallbackFuncs{
		StreamRequestFunc:  s.onRequest,
		StreamResponseFunc: s.onResponse,
		StreamClosedFunc:   s.onClosed,
	}
	srv := xds.NewServer(s.ctx, s.cache, cbs)
	// WaitForHandlers: Stop returns only when every ADS stream's handler has.
	s.grpc = grpc.NewServer(grpc.WaitForHandlers(true))
	discovery.RegisterAggregatedDiscoveryServiceServer(s.grpc, srv)
	for _, ln := range lns {
		s.serve.Add(1)
		go func() {
			defer s.serve.Done()
			if err := s.grpc.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) && s.log != nil {
				s.log.Error("xdsserver: serve", "addr", ln.Addr(), "err", err)
			}
		}()
	}
	return s, nil
}

// SetResources replaces the state of the world of each type in resources
// with the given resources, at version; types not in the map keep theirs,
// and so do types whose resources are the same as before (proto.Equal): their
// version does not change and no response is sent.
// An empty (or nil) list for a type removes every resource of it. Clients
// subscribed to a replaced type get a response with the new version.
// Resources are sent as given, invalid ones included (NACK scenarios).
func (s *Server) SetResources(version string, resources map[resource.Type][]types.Resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("xdsserver: SetResources on a closed server")
	}
	next := s.state
	for typ, rs := range resources {
		i := cache.GetResponseType(typ)
		if i == types.UnknownType {
			return fmt.Errorf("xdsserver: unknown resource type %q", typ)
		}
		names := map[string]bool{}
		for _, r := range rs {
			if r == nil {
				return fmt.Errorf("xdsserver: a nil %s resource", ShortType(typ))
			}
			n := cache.GetResourceName(r)
			if n == "" {
				return fmt.Errorf("xdsserver: a %s resource without a name", ShortType(typ))
			}
			if names[n] {
				return fmt.Errorf("xdsserver: two %s resources named %q", ShortType(typ), n)
			}
			names[n] = true
		}
		if sameResources(next.Resources[i], rs) {
			continue // unchanged: keep the version, send nothing
		}
		next.Resources[i] = cache.NewResources(version, slices.Clone(rs))
	}
	// Under mu: two SetResources apply in the order they were called.
	if err := s.cache.SetSnapshot(s.ctx, nodeKey, &next); err != nil {
		return fmt.Errorf("xdsserver: %w", err)
	}
	s.state = next
	return nil
}

// onRequest is go-control-plane's OnStreamRequest: it records the request
// and, for a NACK, keeps the server from sending the rejected version again.
func (s *Server) onRequest(stream int64, req *discovery.DiscoveryRequest) error {
	e := Event{
		T:       s.now(),
		Stream:  stream,
		Node:    req.GetNode().GetId(),
		TypeURL: req.GetTypeUrl(),
		Kind:    Classify(req),
		Version: req.GetVersionInfo(),
		Nonce:   req.GetResponseNonce(),
		Names:   slices.Clone(req.GetResourceNames()),
	}
	if d := req.GetErrorDetail(); d != nil {
		e.ErrorCode, e.ErrorDetail = d.GetCode(), d.GetMessage()
	}
	s.mu.Lock()
	if e.Node != "" {
		s.nodes[stream] = e.Node
	}
	e.RespondedVersion = s.sent[stream][e.Nonce]
	s.mu.Unlock()
	if e.Kind == NACK && e.RespondedVersion != "" {
		// The cache answers at once when the request's version differs from
		// its own, which after a NACK it always does: the client would get
		// the version it rejected again, and NACK it again, without end. The
		// xDS protocol has the server wait for a new version instead; telling
		// the cache the client is at the rejected version does that (the
		// event above keeps what the client sent).
		req.VersionInfo = e.RespondedVersion
	}
	s.record(e)
	return nil
}

// onResponse is go-control-plane's OnStreamResponse, called with the nonce
// already set, just before the response is sent.
func (s *Server) onResponse(_ context.Context, stream int64, _ *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	e := Event{
		T:        s.now(),
		Stream:   stream,
		TypeURL:  resp.GetTypeUrl(),
		Response: true,
		Version:  resp.GetVersionInfo(),
		Nonce:    resp.GetNonce(),
	}
	for _, r := range resp.GetResources() {
		e.Names = append(e.Names, resourceName(r.GetTypeUrl(), r.GetValue()))
	}
	s.mu.Lock()
	if s.sent[stream] == nil {
		s.sent[stream] = map[string]string{}
	}
	s.sent[stream][e.Nonce] = e.Version
	e.Node = s.nodes[stream]
	s.mu.Unlock()
	s.record(e)
}

func (s *Server) onClosed(stream int64, _ *core.Node) {
	s.mu.Lock()
	delete(s.sent, stream)
	delete(s.nodes, stream)
	s.mu.Unlock()
}

func (s *Server) record(e Event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if s.log != nil {
		s.log.Debug("xdsserver: " + e.String())
	}
	if s.hook != nil {
		s.hook(e)
	}
}

// Events returns every event so far, in the order they were recorded.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Wait returns the first event (counting from the server's start) for
// which match is true, waiting for it until ctx is done.
func (s *Server) Wait(ctx context.Context, match func(Event) bool) (Event, error) {
	seen := 0
	for {
		s.mu.Lock()
		evs, changed := s.events[seen:], s.changed
		s.mu.Unlock()
		for _, e := range evs {
			if match(e) {
				return e, nil
			}
		}
		seen += len(evs)
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("xdsserver: waiting for an event: %w", ctx.Err())
		}
	}
}

// Close stops the server: it closes the listeners and every stream, waits
// for every goroutine the server started, and removes the service
// addresses from the namespace. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()      // ends the ADS handlers' loops and any SetSnapshot waiting on a stream
	s.grpc.Stop() // closes listeners and connections; waits for handlers (WaitForHandlers)
	s.serve.Wait()
	if err := s.removeAddrs(); err != nil {
		return fmt.Errorf("xdsserver: %w", err)
	}
	return nil
}

// logAdapter gives go-control-plane's messages to l (nil: dropped).
func logAdapter(l *slog.Logger) log.Logger {
	if l == nil {
		return log.LoggerFuncs{}
	}
	return log.LoggerFuncs{
		DebugFunc: func(f string, a ...any) { l.Debug("go-control-plane: " + fmt.Sprintf(f, a...)) },
		InfoFunc:  func(f string, a ...any) { l.Info("go-control-plane: " + fmt.Sprintf(f, a...)) },
		WarnFunc:  func(f string, a ...any) { l.Warn("go-control-plane: " + fmt.Sprintf(f, a...)) },
		ErrorFunc: func(f string, a ...any) { l.Error("go-control-plane: " + fmt.Sprintf(f, a...)) },
	}
}

// resourceName is the name of a resource sent as an Any ("" if it does not
// decode).
func resourceName(typeURL string, value []byte) string {
	m, err := anypb.UnmarshalNew(&anypb.Any{TypeUrl: typeURL, Value: value}, proto.UnmarshalOptions{})
	if err != nil {
		return ""
	}
	return cache.GetResourceName(m)
}

// sameResources reports whether cur holds exactly the resources rs (same
// names, proto.Equal contents). A type never set is not the same as an empty
// list: setting it empty sends a response.
func sameResources(cur cache.Resources, rs []types.Resource) bool {
	if cur.Version == "" || len(cur.Items) != len(rs) {
		return false
	}
	for _, r := range rs {
		old, ok := cur.Items[cache.GetResourceName(r)]
		if !ok || !proto.Equal(old.Resource, r) {
			return false
		}
	}
	return true
}
