// Package sim runs a grpc-go load-balancing policy against a simulated
// channel, network and set of backends, and records what the policy did as
// trace events (source "policy", "capture" and "harness").
//
// A Channel is built from a registered balancer.Builder and its JSON LB config:
//
//	w, err := sim.New("conform_pick_first", `{"shuffleAddressList":false}`, sim.Options{Seed: 1})
//	w.AddBackend("b0", "198.18.0.10:443", "[fd00:c0f::10]:443")
//	w.SetFault("198.18.0.10:443", sim.FaultDrop)
//	w.ResolveEndpoints([]string{"198.18.0.10:443", "[fd00:c0f::10]:443"})
//	w.StartRPC("r1", sim.RPCOptions{WaitForReady: true})
//	w.Advance(30 * time.Second)
//	events := w.Events()
//
// # Time
//
// Builders that implement clock.Aware run on a clock.Virtual: time moves only
// in Advance and AdvanceUntil, and the same calls with the same Options.Seed
// give the same Events, byte for byte. Other builders (grpc-go's own
// pick_first) run on wall time: the Channel's timers are real, Advance sleeps,
// and AdvanceUntil waits for events. In both modes every call into the
// balancer is serialized as grpc-go's channel serializes it: one at a time,
// never re-entrantly.
//
// # Subchannels
//
// A simulated subchannel behaves like grpc-go's addrConn: it starts IDLE;
// Connect moves it to CONNECTING and tries its addresses in order within one
// attempt; the attempt ends READY or TRANSIENT_FAILURE; after a failure it
// waits out the backoff of spec/related/connection-backoff.md (seeded jitter)
// and goes back to IDLE, and it connects again only when Connect is called; a
// READY connection that is lost makes it IDLE. Shutdown delivers one final
// SHUTDOWN and nothing after it. RegisterHealthListener delivers the health
// state the address serves for Options.HealthService (SetHealth,
// SetServiceHealth; READY by default) once the subchannel is READY, or READY
// alone with Options.NoHealthCheck.
//
// # Network
//
// Each address has a Fault. With none, TCP is up after one RTT and HTTP/2 is
// ready one RTT later. FaultDrop loses SYNs: the kernel retransmits about 1 s,
// 3 s, 7 s, 15 s … after the first SYN and the attempt hangs until the connect
// deadline (Max(MIN_CONNECT_TIMEOUT, current backoff)) or until a
// retransmission finds the fault cleared. FaultReset and FaultDown refuse the
// SYN after one RTT. FaultStall accepts TCP but never completes HTTP/2, so the
// attempt fails at the connect deadline. FaultDown also kills live
// connections to the address. An address no backend owns behaves as dropped.
// Every SYN is recorded as a "syn" event (source "capture"), its answer as
// "syn-ack" or "rst", so simulated and lab traces compare lane by lane.
//
// # RPCs
//
// StartRPC picks with the channel's semantics (L9, "Make RPCs"; grpc-go's
// picker wrapper): ErrNoSubConnAvailable queues the RPC until the next picker;
// a status error ends it with that status; another error fails it with
// UNAVAILABLE unless it is wait-for-ready (then it queues); a picked SubConn
// that is not READY makes it wait for the next picker. A successful pick
// completes one RTT later, answered by the backend that owns the address.
// A deadline ends the RPC with DEADLINE_EXCEEDED.
package sim

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/gracefulswitch"
)

// Options configures a Channel. The zero value is valid.
type Options struct {
	// Seed seeds the policy's randomness (clock.Rand, virtual mode) and the
	// subchannels' backoff jitter.
	Seed uint64
	// RTT is one network round trip; zero means 1 ms.
	RTT time.Duration
	// Backoff is the connection backoff; the zero value is DefaultBackoff.
	Backoff BackoffConfig
	// SubchannelReResolves makes subchannels ask for re-resolution when an
	// attempt fails or a connection is lost, as grpc-go's addrConn does. Off
	// by default, so that every "resolve-now" event is the policy's own.
	SubchannelReResolves bool
	// HealthService is the health service name the channel's client-side
	// health checking asks each address for (A17, healthCheckConfig's
	// serviceName; "" is the overall health, what SetHealth sets).
	// NoHealthCheck turns client-side health checking off: a health
	// listener then reports the raw connectivity state, READY, whatever the
	// addresses serve (A61, Generic Health Reporting Mechanism: with no
	// health mechanism configured the watch changes nothing).
	HealthService string
	NoHealthCheck bool
	// IdleTimeout is the channel's idle timeout (idle.go); zero: none, the
	// channel never goes IDLE on its own. A caller that models a channel
	// with nothing configured gives DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// DefaultIdleTimeout is the idle timeout of a grpc-go channel given none
// (grpc-go v1.85.0, dialoptions.go: defaultDialOptions), the 30 minutes
// A62 recommends (Use sticky-TF by default).
const DefaultIdleTimeout = 30 * time.Minute

// Channel is one simulated channel: a balancer, its subchannels, the network
// and the backends. Its methods must not be called from inside the balancer.
type Channel struct {
	opts     Options
	builder  string
	cfg      serviceconfig.LoadBalancingConfig
	cfgText  string         // the JSON text cfg was parsed from
	virt     *clock.Virtual // nil in wall mode
	clk      clock.Clock    // the Channel's own timers: virt, or a wall clock
	start    time.Time
	jitter   clock.Rand
	ser      *serializer
	bal      *gracefulswitch.Balancer
	cc       *clientConn
	changed  chan struct{} // closed and replaced on every event (wall-mode waits)
	closeBal sync.Once

	mu         sync.Mutex
	closed     bool
	events     []trace.Event
	backends   map[string]string // address → backend name
	faults     map[string]Fault
	failCodes  map[string]codes.Code            // what each FaultFailRPCs address answers with
	health     map[healthKey]connectivity.State // what each address serves, per service name
	subConns   []*subConn                       // in creation order
	timers     map[*simTimer]struct{}
	state      connectivity.State
	picker     balancer.Picker
	pickerGen  uint64
	queued     []*rpc // RPCs waiting for a picker, in start order
	resolveNow int
	rstate     resolver.State // the last resolver update, for SetConfig

	// The idle timeout's state (idle.go).
	idle          bool
	active        int           // RPCs in flight
	lastActive    time.Duration // the last RPC's start or end
	channelState  connectivity.State
	channelStated bool // channelState was recorded
}

// New builds the balancer registered as builderName inside a new Channel.
// lbConfigJSON, when not empty, is parsed with the builder's ParseConfig
// (the builder must then be a balancer.ConfigParser); when empty the balancer
// gets a nil BalancerConfig.
func New(builderName, lbConfigJSON string, opts Options) (*Channel, error) {
	b := balancer.Get(builderName)
	if b == nil {
		return nil, fmt.Errorf("sim: no balancer registered as %q", builderName)
	}
	cfg, err := parseConfig(b, lbConfigJSON)
	if err != nil {
		return nil, err
	}
	if opts.RTT <= 0 {
		opts.RTT = time.Millisecond
	}
	opts.Backoff = opts.Backoff.withDefaults()
	w := &Channel{
		opts:      opts,
		builder:   builderName,
		cfg:       cfg,
		cfgText:   lbConfigJSON,
		jitter:    clock.NewRand(opts.Seed ^ 0xb0ff5eed),
		changed:   make(chan struct{}),
		backends:  map[string]string{},
		faults:    map[string]Fault{},
		failCodes: map[string]codes.Code{},
		health:    map[healthKey]connectivity.State{},
		timers:    map[*simTimer]struct{}{},
		state:     connectivity.Idle,
	}
	obs := clock.ObserverFuncs{Started: w.timerStarted, Fired: w.timerFired, Stopped: w.timerStopped}
	if _, aware := b.(clock.Aware); aware {
		w.virt = clock.NewVirtual(opts.Seed, obs)
		w.clk, w.start = w.virt, clock.Epoch
	} else {
		w.clk, w.start = clock.NewWall(opts.Seed, obs), time.Now()
	}
	w.ser = newSerializer(w.virt == nil)
	w.cc = &clientConn{w: w}
	// The policy runs under a graceful switch, as under a channel, so that
	// SetPolicy can change it (L9, Swapping out balancer).
	gs := gracefulswitch.New(w.cc, balancer.BuildOptions{})
	w.bal = gs
	w.call(func() { gs.SwitchTo(b) })
	if opts.IdleTimeout > 0 {
		w.mu.Lock()
		w.armIdleLocked(opts.IdleTimeout)
		w.mu.Unlock()
	}
	return w, nil
}

func parseConfig(b balancer.Builder, js string) (serviceconfig.LoadBalancingConfig, error) {
	if js == "" {
		return nil, nil
	}
	p, ok := b.(balancer.ConfigParser)
	if !ok {
		// grpc-go's channel builds such a balancer with no config,
		// whatever the service config gives it (internal/serviceconfig).
		return nil, nil
	}
	cfg, err := p.ParseConfig(json.RawMessage(js))
	if err != nil {
		return nil, fmt.Errorf("sim: %s config: %w", b.Name(), err)
	}
	return cfg, nil
}

// Virtual reports whether the Channel runs on virtual time.
func (w *Channel) Virtual() bool { return w.virt != nil }

// Now is the time since the Channel started: virtual or wall.
func (w *Channel) Now() time.Duration { return w.clk.Now().Sub(w.start) }

// State is the connectivity state the balancer last reported (IDLE before
// its first report).
func (w *Channel) State() connectivity.State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// Events returns a copy of the events recorded so far, in recording order.
func (w *Channel) Events() []trace.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]trace.Event, len(w.events))
	copy(out, w.events)
	return out
}

// ResolveNowCount is how many times re-resolution was requested.
func (w *Channel) ResolveNowCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resolveNow
}

// Close closes the balancer, stops every timer of the Channel and, in wall
// mode, its goroutine. Calls after Close do nothing.
func (w *Channel) Close() {
	w.closeBal.Do(func() {
		w.mu.Lock()
		idle := w.idle
		w.mu.Unlock()
		if !idle { // an idle channel's balancer is closed already
			w.call(func() { w.bal.Close() })
		}
		w.mu.Lock()
		w.closed = true
		for t := range w.timers {
			t.t.Stop() // order does not matter: stopped Channel timers record nothing
		}
		w.timers = nil
		w.mu.Unlock()
		w.ser.close()
	})
}

// call runs f serialized with every other call into the balancer and returns
// once it has run.
func (w *Channel) call(f func()) {
	if w.virt != nil {
		w.ser.enqueue(f)
		w.ser.drain()
		return
	}
	done := make(chan struct{})
	w.ser.enqueue(func() { defer close(done); f() })
	<-done
}

// settle delivers everything queued. Wall mode has its own goroutine for that.
func (w *Channel) settle() {
	if w.virt != nil {
		w.ser.drain()
	}
}
