package driver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/netlab/dns"
)

// Hello is what a driver says about itself (PROTOCOL.md, "hello").
type Hello struct {
	Protocol int             `json:"protocol"`
	Impl     string          `json:"impl"`
	Version  string          `json:"version"`
	Can      map[string]bool `json:"can"`
	Policies []string        `json:"policies,omitempty"` // LB policies it can run; absent: unknown
	Observes string          `json:"observes"`
}

// Capabilities a driver declares in hello.
const (
	CanEndpoints     = "endpoints"
	CanMixedFamilies = "mixed_families"
	CanServiceConfig = "service_config"
	CanShuffle       = "shuffle"
	CanWaitForReady  = "wait_for_ready"
	CanXDS           = "xds"
	// CanResolver false says the driver cannot host the conform:/// resolver
	// (grpcio has no custom-resolver API): resolver updates are then served
	// by the lab DNS. Absent means true.
	CanResolver = "resolver"
	// CanAttemptDelay says pick_first takes a Connection Attempt Delay in
	// its config ("connectionAttemptDelay", the reference's extension: A61
	// makes the knob optional). Absent means false.
	CanAttemptDelay = "connection_attempt_delay"
	// CanEndpointAttributes says resolve may carry endpoint attributes (the
	// reference's hierarchy paths). Absent means false.
	CanEndpointAttributes = "endpoint_attributes"
	// CanSessionMetadata says the implementation takes a stateful session's
	// cookie from the request metadata x-conform-session: conform's stand-in
	// for the stateful-session HTTP filter (A55), which only the reference
	// understands. Absent means false.
	CanSessionMetadata = "session_metadata"
	// CanXDSPickFirst says the xDS client reads a cluster's
	// load_balancing_policy naming pick_first (A62, "pick_first via xDS";
	// A52's registry). Without it a client reads the cluster's lb_policy
	// enum, ROUND_ROBIN, instead, silently. Absent means false.
	CanXDSPickFirst = "xds_pick_first"
	// CanHealthCheck says the client does client-side health checking
	// (gRFC A17) when its service config has a healthCheckConfig: it
	// watches each connected address's health service for the service name
	// given there. Absent means false: a scenario whose client asks for it
	// is not-applicable, never judged on a client that ignores the field.
	CanHealthCheck = "health_check"
	// CanRequestHashHeader says ring_hash takes requestHashHeader in its
	// config and hashes that request header (gRFC A76). Absent means false:
	// a client without it gives every request a random hash, so a scenario
	// whose ring_hash config names one is not-applicable.
	CanRequestHashHeader = "request_hash_header"
	// CanStallWatch says the driver runs a stall watch in its own process
	// and reports each stall as a stall event (PROTOCOL.md): a timer check
	// on it is then judged as on a client in conform's process, to
	// suites/spec's LabTimer, and is inconclusive where the driver's
	// process stood still. Absent means false: judged to LabTimerDriver.
	CanStallWatch = "stall_watch"
	// CanConfigUpdate says the driver takes the config command: a new
	// service config for its channel during the run, carried by its
	// conform:/// resolver's next update (with the last addresses) and by
	// every update after, as a resolver that returns service configs does
	// (L9, "Service config be associated with a server name and returned by
	// resolver"). Absent means false: a scenario with a config step is
	// not-applicable.
	CanConfigUpdate = "config_update"
	// CanIdleTimeout says create takes idle_timeout_ms, the channel's idle
	// timeout (A62). Absent means false: a scenario that sets the client's
	// idle timeout is not-applicable.
	CanIdleTimeout = "idle_timeout"
)

// ProcessOptions configure a driver process.
type ProcessOptions struct {
	// Now stamps each line the driver writes when it is read. Default: the
	// lab's clock.
	Now func() time.Duration
	// Record receives the driver's events as trace events.
	Record func(trace.Event)
	// CommandTimeout bounds the wait for a command's reply. Default 10 s.
	CommandTimeout time.Duration
	// HelloTimeout bounds the wait for the reply to hello, which includes
	// the driver's start: loading its runtime and the implementation
	// (grpc-js with grpc-js-xds takes seconds, more on a loaded machine).
	// Default 60 s.
	HelloTimeout time.Duration
	// LabResolverDir, when set, holds the files of dns.WriteResolverFiles:
	// the driver runs in a mount namespace of its own in which its system
	// resolver asks the lab's DNS only (dns.WithLabResolver).
	LabResolverDir string
}

// stderrTail is how much of a driver's stderr is kept.
const stderrTail = 4 << 10

// maxLine bounds one protocol line.
const maxLine = 1 << 20

// Process is a running driver, started in the lab's client namespace.
// Commands are sent one at a time; events go to ProcessOptions.Record.
type Process struct {
	proc    *netlab.Process
	stdin   *os.File
	opts    ProcessOptions
	stderr  *tailBuffer
	replies chan reply
	done    chan struct{} // closed when the reader stops: stdout closed or garbage
	readErr error         // why the reader stopped; set before done is closed
	stop    chan struct{} // closed by Kill: the reader drops replies
	exited  chan struct{} // closed when the process has exited
	exitErr error         // its exit status; set before exited is closed
	nextID  int64
	hello   Hello
	closed  bool
}

// reply is an ok or error line for a command.
type reply struct {
	id    int64
	err   string
	hello *Hello
}

// Start starts cmd in the lab's client namespace and says hello.
func Start(lab *netlab.Lab, c Command, opts ProcessOptions) (*Process, error) {
	if opts.Now == nil {
		opts.Now = lab.Now
	}
	if opts.Record == nil {
		opts.Record = func(trace.Event) {}
	}
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = 10 * time.Second
	}
	if opts.HelloTimeout <= 0 {
		opts.HelloTimeout = time.Minute
	}
	p := newProcess(opts)
	if err := p.start(lab, c); err != nil {
		return nil, err
	}
	var h reply
	if err := p.commandWithin(map[string]any{"op": "hello"}, &h, opts.HelloTimeout); err != nil {
		var cr *Crash
		if errors.As(err, &cr) {
			// Before hello nothing of the scenario has run: a crash
			// there says nothing about the requirements.
			return nil, errors.New(cr.Error())
		}
		return nil, err
	}
	if h.hello == nil || h.hello.Protocol != 1 {
		p.Kill()
		return nil, p.failure(fmt.Errorf("hello: want protocol 1, got %+v", h.hello))
	}
	p.hello = *h.hello
	return p, nil
}

func newProcess(opts ProcessOptions) *Process {
	return &Process{opts: opts, stderr: &tailBuffer{max: stderrTail}, replies: make(chan reply, 1),
		done: make(chan struct{}), stop: make(chan struct{}), exited: make(chan struct{})}
}

// start wires the pipes and starts the process; the parent keeps only its
// ends, so stdout reaches EOF when the driver (and anything it started)
// has exited.
func (p *Process) start(lab *netlab.Lab, c Command) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, append(driverEnviron(os.Environ()), c.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	if p.opts.LabResolverDir != "" {
		cmd, err = dns.WithLabResolver(cmd, p.opts.LabResolverDir)
	}
	if err == nil {
		p.proc, err = lab.StartProcess("client0", cmd)
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return fmt.Errorf("driver %s: %w", c.Path, err)
	}
	p.stdin = inW
	go p.read(outR)
	go func() {
		p.exitErr = p.proc.Wait()
		close(p.exited)
	}()
	return nil
}

// Hello is what the driver said about itself.
func (p *Process) Hello() Hello { return p.hello }

// Create creates the driver's channel.
func (p *Process) Create(target, serviceConfig string) error {
	return p.CreateWith(target, serviceConfig, CreateOptions{})
}

// CreateOptions are create's optional fields.
type CreateOptions struct {
	// IdleTimeout is the channel's idle timeout (idle_timeout_ms, for a
	// driver that says CanIdleTimeout); zero leaves the default.
	IdleTimeout time.Duration
}

// CreateWith creates the driver's channel with create's optional fields.
func (p *Process) CreateWith(target, serviceConfig string, o CreateOptions) error {
	cmd := map[string]any{"op": "create", "target": target, "service_config": serviceConfig}
	if o.IdleTimeout > 0 {
		cmd["idle_timeout_ms"] = o.IdleTimeout.Milliseconds()
	}
	return p.command(cmd, nil)
}

// Resolve pushes a resolver update: one address list per endpoint.
func (p *Process) Resolve(endpoints [][]string, attrs []map[string]string) error {
	cmd := map[string]any{"op": "resolve", "endpoints": endpoints}
	if attrs != nil {
		cmd["attributes"] = attrs
	}
	return p.command(cmd, nil)
}

// Config gives the channel a new service config (JSON text) through its
// conform resolver, with the last resolve command's endpoints.
func (p *Process) Config(serviceConfig string) error {
	return p.command(map[string]any{"op": "config", "service_config": serviceConfig}, nil)
}

// RPC describes one call.
type RPC struct {
	ID           string
	Method       string
	WaitForReady bool
	Deadline     time.Duration // zero: none
	Metadata     map[string]string
}

// StartRPC starts one call; its outcome comes as an rpc-result event.
func (p *Process) StartRPC(r RPC) error {
	md := r.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return p.command(map[string]any{"op": "rpc", "rpc": r.ID, "method": r.Method,
		"wait_for_ready": r.WaitForReady, "deadline_ms": r.Deadline.Milliseconds(), "metadata": md}, nil)
}

// Close asks the driver to close its channel and exit, and waits for its
// last lines; a driver that does not exit in time is killed. The error
// says what went wrong, with the stderr tail.
func (p *Process) Close() error {
	if p.closed {
		return nil
	}
	err := p.command(map[string]any{"op": "close"}, nil)
	if !p.closed { // the command did not kill it
		p.stdin.Close()
		select {
		case <-p.exited:
			if err == nil && p.exitErr != nil {
				err = p.failure(fmt.Errorf("exited with %v after close", p.exitErr))
			}
		case <-time.After(p.opts.CommandTimeout):
			err = p.failure(fmt.Errorf("did not exit within %v of close", p.opts.CommandTimeout))
		}
	}
	p.Kill() // anything it left behind
	if err == nil && p.readErr != nil && !errors.Is(p.readErr, io.EOF) {
		err = p.failure(p.readErr)
	}
	return err
}

// Kill ends the driver and everything it started, and waits for the reader.
func (p *Process) Kill() {
	if p.closed {
		return
	}
	p.closed = true
	close(p.stop)
	p.stdin.Close()
	p.proc.Kill()
	<-p.done
	<-p.exited
}

// Pid is the driver's process id.
func (p *Process) Pid() int { return p.proc.Pid() }

// Stderr is the tail of what the driver wrote to stderr.
func (p *Process) Stderr() string { return p.stderr.String() }

// command sends one command and waits for its reply. A driver that exits,
// writes garbage or does not answer in time is killed; the error carries
// its stderr tail.
func (p *Process) command(c map[string]any, out *reply) error {
	return p.commandWithin(c, out, p.opts.CommandTimeout)
}

// commandWithin is command with a reply due within d.
func (p *Process) commandWithin(c map[string]any, out *reply, d time.Duration) error {
	if p.closed {
		return errors.New("driver: already stopped")
	}
	p.nextID++
	c["id"] = p.nextID
	b, _ := json.Marshal(c)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.Kill()
		return p.failure(fmt.Errorf("%s: writing the command: %w", c["op"], err))
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-p.replies:
		return p.replied(c["op"], r, out)
	case <-p.done:
		// The reader may have queued the reply before it met the end of the
		// output (a driver exits right after its reply to close): a reply
		// that arrived is the answer, whichever case select chose.
		select {
		case r := <-p.replies:
			return p.replied(c["op"], r, out)
		default:
		}
		p.Kill()
		return p.failure(fmt.Errorf("%s: %w", c["op"], p.readErr))
	case <-timer.C:
		p.Kill()
		return p.failure(fmt.Errorf("%s: no reply within %v (driver hung?)", c["op"], d))
	}
}

// replied checks that r answers the command just sent.
func (p *Process) replied(op any, r reply, out *reply) error {
	if r.id != p.nextID {
		p.Kill()
		return p.failure(fmt.Errorf("%s: reply to id %d while waiting for id %d", op, r.id, p.nextID))
	}
	if out != nil {
		*out = r
	}
	if r.err != "" {
		return fmt.Errorf("driver: %s: %s", op, r.err)
	}
	return nil
}

// failure is err with the driver's exit status and stderr tail.
//
// Callers kill the driver first (Kill waits until it is reaped), so its
// exit status is known: a crash of the implementation, told from a driver
// fault by the signal, is a *Crash.
func (p *Process) failure(err error) error {
	msg := fmt.Sprintf("driver: %v", err)
	var exitErr error // p.exitErr may be read only once the process has exited
	select {
	case <-p.exited:
		exitErr = p.exitErr
	default: // still running: close's timeout
	}
	if exitErr != nil {
		msg += fmt.Sprintf(" (driver %v)", exitErr)
	}
	tail := p.stderr.String()
	if tail != "" {
		msg += "\n--- driver stderr (tail) ---\n" + tail
	}
	if sig, ok := crashSignal(exitErr); ok {
		return &Crash{Signal: sig, msg: msg}
	}
	if line, ok := goPanic(exitErr, tail); ok {
		return &Crash{Panic: line, msg: msg}
	}
	return errors.New(msg)
}

// read turns the driver's lines into replies and events until stdout
// closes (readErr io.EOF) or a line is not the protocol.
func (p *Process) read(r *os.File) {
	defer close(p.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br)
		t := p.opts.Now()
		if err != nil {
			p.readErr = err
			return
		}
		if err := p.handle(line, t); err != nil {
			p.readErr = fmt.Errorf("stdout line %d is not the protocol (%v): %.200q", n, err, line)
			return
		}
	}
}

// readLine reads one line of at most maxLine bytes, without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("a stdout line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, fmt.Errorf("stdout ended inside a line: %.200q", line)
		default:
			return nil, err
		}
	}
}

// line is any line from a driver.
type line struct {
	ID      *int64          `json:"id"`
	Ev      string          `json:"ev"`
	Err     string          `json:"err"`
	Hello   *Hello          `json:"hello"`
	State   string          `json:"state"`
	RPC     string          `json:"rpc"`
	Code    string          `json:"code"`
	Backend string          `json:"backend"`
	Line    string          `json:"line"`
	Event   json.RawMessage `json:"event"`
	LateUS  *int64          `json:"late_us"`
	AgoUS   int64           `json:"ago_us"`
}

var channelStates = map[string]bool{"IDLE": true, "CONNECTING": true, "READY": true, "TRANSIENT_FAILURE": true, "SHUTDOWN": true}

// handle dispatches one line read at time t.
func (p *Process) handle(b []byte, t time.Duration) error {
	var l line
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return err
	}
	ev := trace.Event{T: t, Source: trace.SourceDriver}
	switch {
	case (l.Ev == "ok" || l.Ev == "error") && l.ID != nil:
		r := reply{id: *l.ID, err: l.Err, hello: l.Hello}
		if l.Ev == "error" && r.err == "" {
			r.err = "(an error without a message)"
		}
		select {
		case p.replies <- r:
		case <-p.stop:
		}
		return nil
	case l.Ev == "error":
		ev.Kind, ev.Err = trace.KindLog, l.Err
	case l.Ev == "channel-state" && channelStates[l.State]:
		ev.Kind, ev.State = trace.KindChannelState, l.State
	case l.Ev == "resolve-now":
		ev.Kind = trace.KindResolveNow
	case l.Ev == "rpc-result" && l.RPC != "" && l.Code != "":
		ev.Kind, ev.RPC, ev.Code, ev.Backend, ev.Err = trace.KindRPCResult, l.RPC, l.Code, l.Backend, l.Err
	case l.Ev == "log":
		ev.Kind, ev.Detail = trace.KindLog, l.Line
	case l.Ev == "stall" && l.LateUS != nil && *l.LateUS > 0 && l.AgoUS >= 0:
		// The driver's watch woke late_us after it should have, ago_us
		// before the line: the stall is the interval that ended then.
		late, ago := time.Duration(*l.LateUS)*time.Microsecond, time.Duration(l.AgoUS)*time.Microsecond
		ev.Kind, ev.T, ev.Duration = trace.KindStall, t-ago-late, late
	case l.Ev == "policy":
		pe, err := policyEvent(l.Event)
		if err != nil {
			return err
		}
		ev = pe
		ev.T = t
	default:
		return fmt.Errorf("unknown or incomplete event %q", l.Ev)
	}
	p.opts.Record(ev)
	return nil
}

// policyEvent reads the trace event of a policy line (without "t").
func policyEvent(raw json.RawMessage) (trace.Event, error) {
	var e trace.Event
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("policy event: %w", err)
	}
	if e.Kind == "" || e.Source == "" || e.T != 0 {
		return e, fmt.Errorf("policy event needs src and kind, and no t")
	}
	return e, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// logVars are the gRPC and conform variables a driver inherits: logging
// only, for whoever debugs a driver run.
var logVars = []string{"GRPC_VERBOSITY", "GRPC_TRACE", "GRPC_GO_LOG_VERBOSITY_LEVEL",
	"GRPC_GO_LOG_SEVERITY_LEVEL", "GRPC_NODE_VERBOSITY", "GRPC_NODE_TRACE",
	"CONFORM_GRPC_JS_LOG_EVENTS"}

// driverEnviron is environ as a driver inherits it. Gone are every other
// GRPC_* variable — the client under test gets the scenario's switches and,
// for an xds target, the lab's bootstrap (RunLab adds them to Command.Env),
// never conform's own; an xDS bootstrap is removed, not emptied, since
// C-core reads an empty GRPC_XDS_BOOTSTRAP as a file name — every other
// CONFORM_* variable, since the drivers read some as settings that change
// what they claim or how the client is built (CONFORM_CAN,
// CONFORM_POLICY_MAP, CONFORM_GRPC_JS_CHANNEL_OPTIONS): the first two reach
// a driver only through Command.Env, from conform's own flags, the last
// only when the driver is run by hand (its README) — and the proxy
// settings, which every gRPC honours and which name proxies outside the lab.
func driverEnviron(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		setting := (strings.HasPrefix(name, "GRPC_") || strings.HasPrefix(name, "CONFORM_")) && !slices.Contains(logVars, name)
		proxy := strings.HasSuffix(strings.ToLower(name), "_proxy")
		if !setting && !proxy {
			out = append(out, kv)
		}
	}
	return out
}

// Environ is this process's environment as a driver inherits it, for any
// other program conform starts to run a client (the simulator's program
// for a user's balancer).
func Environ() []string { return driverEnviron(os.Environ()) }
