package sim

import (
	"encoding/json"
	"errors"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"

	"github.com/conformlab/conform/harness/clock"
)

// testLBName is a test-only policy on the clock seam: one subchannel per
// endpoint (all its addresses), configurable reconnects, picks and timers.
const testLBName = "conform_sim_test_lb"

func init() { balancer.Register(testLBBuilder{}) }

type testLBConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`
	// Reconnect calls Connect whenever a subchannel goes IDLE.
	Reconnect bool `json:"reconnect"`
	// FailPicks makes the picker fail with errNoReady while some subchannel
	// is in TRANSIENT_FAILURE and none is READY.
	FailPicks bool `json:"failPicks"`
	// DropPicks makes the picker fail with an UNAVAILABLE status instead.
	DropPicks bool `json:"dropPicks"`
	// PickAny picks the first subchannel whatever its state.
	PickAny bool `json:"pickAny"`
	// Health registers a health listener on READY and treats a subchannel
	// as usable only while its health is READY.
	Health bool `json:"health"`
	// Timers are started on the first resolver update; a timer named
	// "failover" is stopped when a subchannel becomes READY.
	Timers []testTimer `json:"timers"`
}

type testTimer struct {
	Purpose string `json:"purpose"`
	MS      int64  `json:"ms"`
	// Every restarts the timer each time it fires.
	Every bool `json:"every"`
}

var errNoReady = errors.New("test lb: no READY subchannel")

type testLBBuilder struct{}

func (testLBBuilder) OnClockSeam() {}
func (testLBBuilder) Name() string { return testLBName }
func (testLBBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &testLB{cc: cc, clk: clock.From(cc), timers: map[string]clock.Timer{}}
}
func (testLBBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	cfg := &testLBConfig{}
	if err := json.Unmarshal(js, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

type testSC struct {
	sc     balancer.SubConn
	state  connectivity.State
	health connectivity.State
	// states are the states delivered to the StateListener, in order.
	states []connectivity.State
}

type testLB struct {
	cc      balancer.ClientConn
	clk     clock.Clock
	cfg     *testLBConfig
	scs     []*testSC
	timers  map[string]clock.Timer
	started bool
	updates []balancer.ClientConnState // every UpdateClientConnState, in order
	done    int                        // Done callbacks seen
	failed  int                        // of which with an error
	// busy is set while a call into the policy runs; reentered counts calls
	// that arrived while another was running (the channel must prevent it).
	busy      bool
	reentered int
}

// enter marks a call into the policy; the returned func marks its end.
func (b *testLB) enter() func() {
	if b.busy {
		b.reentered++
	}
	b.busy = true
	return func() { b.busy = false }
}

func (b *testLB) UpdateClientConnState(s balancer.ClientConnState) error {
	defer b.enter()()
	b.updates = append(b.updates, s)
	if c, ok := s.BalancerConfig.(*testLBConfig); ok {
		b.cfg = c
	} else if b.cfg == nil {
		b.cfg = &testLBConfig{}
	}
	if len(s.ResolverState.Endpoints) == 0 {
		for _, t := range b.scs {
			t.sc.Shutdown()
		}
		b.scs = nil
		return balancer.ErrBadResolverState
	}
	if !b.started {
		b.started = true
		for _, t := range b.cfg.Timers {
			b.startTimer(t)
		}
	}
	if len(b.scs) > 0 {
		return nil
	}
	for _, ep := range s.ResolverState.Endpoints {
		t := &testSC{state: connectivity.Idle}
		sc, err := b.cc.NewSubConn(ep.Addresses, balancer.NewSubConnOptions{
			StateListener: func(s balancer.SubConnState) { b.updateState(t, s) },
		})
		if err != nil {
			return err
		}
		t.sc = sc
		b.scs = append(b.scs, t)
		sc.Connect()
	}
	b.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Connecting, Picker: b.picker()})
	return nil
}

func (b *testLB) startTimer(t testTimer) {
	b.timers[t.Purpose] = b.clk.AfterFunc(t.Purpose, time.Duration(t.MS)*time.Millisecond, func() {
		defer b.enter()()
		if t.Every {
			b.startTimer(t)
		}
	})
}

func (b *testLB) updateState(t *testSC, s balancer.SubConnState) {
	defer b.enter()()
	t.state = s.ConnectivityState
	t.states = append(t.states, s.ConnectivityState)
	switch s.ConnectivityState {
	case connectivity.Idle:
		if b.cfg.Reconnect {
			t.sc.Connect()
		}
	case connectivity.Ready:
		if tm, ok := b.timers["failover"]; ok {
			tm.Stop()
		}
		t.health = connectivity.Ready
		if b.cfg.Health {
			t.health = connectivity.Connecting
			t.sc.RegisterHealthListener(func(h balancer.SubConnState) {
				defer b.enter()()
				t.health = h.ConnectivityState
				b.publish()
			})
		}
	case connectivity.Shutdown:
		return
	}
	b.publish()
}

func (b *testLB) publish() {
	st := connectivity.Connecting
	for _, t := range b.scs {
		if t.usable() {
			st = connectivity.Ready
			break
		}
		if t.state == connectivity.TransientFailure || t.health == connectivity.TransientFailure {
			st = connectivity.TransientFailure
		}
	}
	b.cc.UpdateState(balancer.State{ConnectivityState: st, Picker: b.picker()})
}

func (t *testSC) usable() bool {
	return t.state == connectivity.Ready && t.health == connectivity.Ready
}

// picker snapshots the policy's state into an immutable picker.
func (b *testLB) picker() balancer.Picker {
	p := &testPicker{lb: b}
	for _, t := range b.scs {
		if b.cfg.PickAny || t.usable() {
			p.sc = t.sc
			return p
		}
		if t.state == connectivity.TransientFailure {
			p.tf = true
		}
	}
	p.fail = p.tf && b.cfg.FailPicks
	p.drop = p.tf && b.cfg.DropPicks
	return p
}

func (b *testLB) ResolverError(error)                                        {}
func (b *testLB) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (b *testLB) ExitIdle() {
	defer b.enter()()
	for _, t := range b.scs {
		t.sc.Connect()
	}
}
func (b *testLB) Close() {
	defer b.enter()()
	for _, tm := range b.timers {
		tm.Stop()
	}
}

type testPicker struct {
	lb             *testLB
	sc             balancer.SubConn
	tf, fail, drop bool
}

func (p *testPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	switch {
	case p.sc != nil:
		return balancer.PickResult{SubConn: p.sc, Done: func(di balancer.DoneInfo) {
			p.lb.done++
			if di.Err != nil {
				p.lb.failed++
			}
		}}, nil
	case p.drop:
		return balancer.PickResult{}, status.Error(codes.Unavailable, "test lb: dropped")
	case p.fail:
		return balancer.PickResult{}, errNoReady
	}
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}
