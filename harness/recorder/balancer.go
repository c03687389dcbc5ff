package recorder

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/gracefulswitch"
)

// recorder is one recorder instance: a balancer wrapping one child.
//
// The channel serializes calls into the balancer; mu guards only what the
// picker and the subchannels' listeners share with them (the sink, the
// subchannel count) and makes every event's time stamp and delivery one
// step, so that the sink sees events in time order.
type recorder struct {
	cc        balancer.ClientConn // the channel's
	buildOpts balancer.BuildOptions
	opts      Options
	fixed     balancer.Builder // New's child; nil: the config names it
	clk       clock.Clock      // the children's clock, timers observed
	now       func() time.Duration

	child    *gracefulswitch.Balancer // nil before the first config
	sinkSet  bool                     // the registered form has looked its sink up
	sinkName string                   // under this name

	mu     sync.Mutex
	sink   Sink
	lastSC int // subchannels created
}

var _ balancer.Balancer = (*recorder)(nil)

func newRecorder(cc balancer.ClientConn, bopts balancer.BuildOptions, opts Options, fixed balancer.Builder) *recorder {
	r := &recorder{cc: cc, buildOpts: bopts, opts: opts, fixed: fixed, sink: opts.Sink}
	if r.sink == nil {
		r.sink = discard{}
	}
	r.clk = r.childClock()
	r.now = r.timebase()
	return r
}

// childClock is the clock seam-aware children get: the channel's own if it
// carries one (the simulator's virtual clock), else a wall clock; either way
// the recorder observes its timers.
func (r *recorder) childClock() clock.Clock {
	if p, ok := r.cc.(clock.Provider); ok {
		if c := p.Clock(); c != nil {
			return &observedClock{Clock: c, obs: r}
		}
	}
	seed := r.opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return clock.NewWall(seed, r)
}

// timebase is how T is measured: Options.Now, else the sink's Timebase,
// else the time since now on the children's clock (monotonic on wall time).
func (r *recorder) timebase() func() time.Duration {
	if r.opts.Now != nil {
		return r.opts.Now
	}
	if tb, ok := r.sink.(Timebase); ok {
		return tb.Now
	}
	clk := r.clk
	start := clk.Now()
	return func() time.Duration { return clk.Now().Sub(start) }
}

// emit stamps e and hands it to the sink.
func (r *recorder) emit(e trace.Event) {
	if e.Source == "" {
		e.Source = trace.SourcePolicy
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.T = r.now()
	r.sink.Record(e)
}

func (r *recorder) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, _ := s.BalancerConfig.(*lbConfig)
	if r.fixed == nil && cfg != nil && (!r.sinkSet || cfg.sink != r.sinkName) {
		r.sinkSet, r.sinkName = true, cfg.sink
		r.setSink(lookupSink(cfg.sink))
	}
	if cfg != nil && cfg.seed != 0 && r.child == nil && r.opts.Seed != cfg.seed {
		r.opts.Seed = cfg.seed // before the first child sees its clock
		r.clk = r.childClock()
	}
	r.emit(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: endpointAddrs(s.ResolverState)})
	child, childCfg := r.fixed, serviceconfig.LoadBalancingConfig(nil)
	if cfg != nil {
		child, childCfg = cfg.child, cfg.childCfg
	}
	if child == nil {
		return fmt.Errorf("%s: no child policy configured", Name)
	}
	r.switchTo(child)
	s.BalancerConfig = childCfg
	return r.child.UpdateClientConnState(s)
}

// setSink replaces the sink; the registered form learns it from its config.
func (r *recorder) setSink(s Sink) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sink = s
	if r.opts.Now == nil {
		if tb, ok := s.(Timebase); ok {
			r.now = tb.Now
		}
	}
}

// switchTo makes b the child policy: built at once the first time; a
// different policy later is built beside the one running, which serves until
// the new one may be picked from (L9, Swapping out balancer; package
// gracefulswitch), as a channel changes its policy.
func (r *recorder) switchTo(b balancer.Builder) {
	if r.child == nil {
		r.child = gracefulswitch.New(&childCC{ClientConn: r.cc, r: r}, r.buildOpts)
	}
	r.child.SwitchTo(b)
}

func (r *recorder) ResolverError(err error) {
	r.emit(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverError, Err: err.Error()})
	if r.child == nil {
		r.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: base.NewErrPicker(err)})
		return
	}
	r.child.ResolverError(err)
}

// UpdateSubConnState is deprecated in grpc-go and never called for
// subchannels created with a StateListener, which all of the recorder's are.
func (r *recorder) UpdateSubConnState(sc balancer.SubConn, s balancer.SubConnState) {
	if r.child != nil {
		r.child.UpdateSubConnState(unwrap(sc), s)
	}
}

func (r *recorder) ExitIdle() {
	r.emit(trace.Event{Source: trace.SourceHarness, Kind: trace.KindExitIdle})
	if r.child != nil {
		r.child.ExitIdle()
	}
}

func (r *recorder) Close() {
	if r.child != nil {
		r.child.Close()
		r.child = nil
	}
}

// newSubConnID names the next subchannel: sc1, sc2, … in creation order.
func (r *recorder) newSubConnID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastSC++
	return fmt.Sprintf("sc%d", r.lastSC)
}

// The clock.Observer of the children's clock.

func (r *recorder) TimerStarted(id uint64, purpose string, d time.Duration) {
	r.emit(trace.Event{Kind: trace.KindTimerStart, Timer: purpose, TimerID: id, Duration: d})
}

func (r *recorder) TimerFired(id uint64, purpose string) {
	r.emit(trace.Event{Kind: trace.KindTimerFire, Timer: purpose, TimerID: id})
}

func (r *recorder) TimerStopped(id uint64, purpose string) {
	r.emit(trace.Event{Kind: trace.KindTimerStop, Timer: purpose, TimerID: id})
}

// endpointAddrs lists a resolver state's addresses per endpoint, as the
// simulator does: a state with only Addresses counts each as an endpoint.
func endpointAddrs(s resolver.State) [][]string {
	var out [][]string
	for _, ep := range s.Endpoints {
		out = append(out, addrStrings(ep.Addresses))
	}
	if len(s.Endpoints) == 0 {
		for _, a := range s.Addresses {
			out = append(out, []string{a.Addr})
		}
	}
	return out
}

func addrStrings(addrs []resolver.Address) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.Addr
	}
	return out
}

var errForeignSubConn = errors.New("the picked SubConn was not created through the recorder")
