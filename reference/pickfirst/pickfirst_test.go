package pickfirst_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/lbtest"
	"github.com/conformlab/conform/reference/pickfirst"
)

const cad = "connection attempt delay"

// TestPickFirst_HappyEyeballs_DefaultDelay250ms verifies A61, Happy Eyeballs
// in the pick_first LB Policy: a 250 ms timer after every attempt but the
// last, each firing starting the next attempt without ending the earlier ones.
func TestPickFirst_HappyEyeballs_DefaultDelay250ms(t *testing.T) {
	w := newWorld(t, "", 1)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(250*ms, lbtest.V4b), at(500*ms, lbtest.V4c))
	expect(t, "timers", lbtest.Timers(evs),
		at(0, "start "+cad+" 250ms"), at(250*ms, "fire "+cad),
		at(250*ms, "start "+cad+" 250ms"), at(500*ms, "fire "+cad))
	expect(t, "shutdowns", lbtest.Shutdowns(evs))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"))
}

// TestPickFirst_HappyEyeballs_DelayClampedTo100msAnd2s verifies A61, Happy
// Eyeballs in the pick_first LB Policy: a configured delay is used, values
// below 100 ms count as 100 ms and above 2 s as 2 s.
func TestPickFirst_HappyEyeballs_DelayClampedTo100msAnd2s(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		step time.Duration
	}{
		{`{"connectionAttemptDelay": "10ms"}`, 100 * ms},
		{`{"connectionAttemptDelay": "300ms"}`, 300 * ms},
		{`{"connectionAttemptDelay": "5s"}`, 2 * time.Second},
	} {
		t.Run(tc.cfg, func(t *testing.T) {
			w := newWorld(t, tc.cfg, 1)
			w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
			w.Advance(5 * time.Second)
			expect(t, "connects", lbtest.Connects(w.Events()), at(0, lbtest.V4a), at(tc.step, lbtest.V4b), at(2*tc.step, lbtest.V4c))
		})
	}
}

// TestPickFirst_HappyEyeballs_FirstReadyWins verifies A61, Happy Eyeballs in
// the pick_first LB Policy: the first READY subchannel is chosen, the timer
// is cancelled and every other subchannel shut down.
func TestPickFirst_HappyEyeballs_FirstReadyWins(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b1", lbtest.V4b)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	w.Advance(time.Second)
	w.StartRPC("r1", sim.RPCOptions{})
	w.Advance(time.Second)
	evs := w.Events()
	// lbtest.V4b: SYN at 250 ms, SYN-ACK 1 RTT later, HTTP/2 up 1 RTT after that.
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(250*ms, lbtest.V4b))
	expect(t, "created", lbtest.Created(evs), at(0, lbtest.V4a), at(250*ms, lbtest.V4b))
	expect(t, "timers", lbtest.Timers(evs),
		at(0, "start "+cad+" 250ms"), at(250*ms, "fire "+cad),
		at(250*ms, "start "+cad+" 250ms"), at(252*ms, "stop "+cad))
	expect(t, "shutdowns", lbtest.Shutdowns(evs), at(252*ms, lbtest.V4a))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(252*ms, "READY"))
	if r := lbtest.RPCResult(t, evs, "r1"); r.Backend != "b1" {
		t.Errorf("r1 answered by %q (%s), want b1", r.Backend, r.Err)
	}
}

// TestPickFirst_HappyEyeballs_FailureStartsNextAttemptAtOnce verifies A61,
// Happy Eyeballs in the pick_first LB Policy: an attempt that fails before
// the timer fires moves the pass on immediately.
func TestPickFirst_HappyEyeballs_FailureStartsNextAttemptAtOnce(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.AddBackend("b1", lbtest.V4b)
	w.SetFault(lbtest.V4a, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(1*ms, lbtest.V4b))
	expect(t, "timers", lbtest.Timers(evs), at(0, "start "+cad+" 250ms"), at(1*ms, "stop "+cad))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(3*ms, "READY"))
	expect(t, "shutdowns", lbtest.Shutdowns(evs), at(3*ms, lbtest.V4a))
}

// TestPickFirst_HappyEyeballs_PassEndsWhenEveryAddressFailed verifies A61,
// Happy Eyeballs in the pick_first LB Policy: with every SYN dropped the pass
// ends, with re-resolution and TRANSIENT_FAILURE, only when the last attempt
// hits its 20 s connect deadline.
func TestPickFirst_HappyEyeballs_PassEndsWhenEveryAddressFailed(t *testing.T) {
	w := newWorld(t, "", 1)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	w.Advance(20*time.Second + 499*ms)
	if got := w.State(); got != connectivity.Connecting {
		t.Fatalf("state at 20.499 s = %v, want CONNECTING", got)
	}
	w.Advance(1 * ms)
	evs := w.Events()
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(20500*ms, "TRANSIENT_FAILURE"))
	expect(t, "resolve-now", lbtest.ResolveNows(evs), at(20500*ms, "resolve-now"))
}

// TestPickFirst_StickyTF_UntilReady verifies A62, Use sticky-TF by default:
// once every address failed the policy reports TRANSIENT_FAILURE, keeps
// reconnecting, never reports CONNECTING, and leaves only for READY.
func TestPickFirst_StickyTF_UntilReady(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.AddBackend("b1", lbtest.V4b)
	w.SetFault(lbtest.V4a, sim.FaultReset)
	w.SetFault(lbtest.V4b, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(2 * time.Second)
	w.SetFault(lbtest.V4b, sim.FaultNone)
	w.Advance(2 * time.Second)
	evs := w.Events()
	// lbtest.V4a fails at 1 ms, lbtest.V4b at 2 ms; backoff 1 s, then 1.6 s.
	expect(t, "connects", lbtest.Connects(evs),
		at(0, lbtest.V4a), at(1*ms, lbtest.V4b),
		at(1001*ms, lbtest.V4a), at(1002*ms, lbtest.V4b),
		at(2602*ms, lbtest.V4a), at(2603*ms, lbtest.V4b))
	expect(t, "states", lbtest.States(evs),
		at(0, "CONNECTING"), at(2*ms, "TRANSIENT_FAILURE"),
		at(1003*ms, "TRANSIENT_FAILURE"), at(2605*ms, "READY"))
	expect(t, "shutdowns", lbtest.Shutdowns(evs), at(2605*ms, lbtest.V4a))
}

// TestPickFirst_ReResolution_AfterEveryRoundOfFailures verifies A61, Happy
// Eyeballs in the pick_first LB Policy: after the first pass, re-resolution
// is requested each time the failure count reaches the number of
// subchannels, not only once.
func TestPickFirst_ReResolution_AfterEveryRoundOfFailures(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.AddBackend("b1", lbtest.V4b)
	w.SetFault(lbtest.V4a, sim.FaultReset)
	w.SetFault(lbtest.V4b, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(6 * time.Second)
	// Failures: lbtest.V4a at 1 ms, 1.002 s, 2.603 s, 5.164 s; lbtest.V4b one ms later.
	expect(t, "resolve-now", lbtest.ResolveNows(w.Events()),
		at(2*ms, "resolve-now"), at(1003*ms, "resolve-now"),
		at(2604*ms, "resolve-now"), at(5165*ms, "resolve-now"))
	if n := w.ResolveNowCount(); n != 4 {
		t.Errorf("ResolveNowCount = %d, want 4", n)
	}
}

// TestPickFirst_NewList_ReusesSubchannelsAndStartsNewPass verifies A61, Happy
// Eyeballs in the pick_first LB Policy: a new list starts a new pass; a
// subchannel on both lists is kept, and being CONNECTING when the pass
// reaches it, is treated as just asked to connect.
func TestPickFirst_NewList_ReusesSubchannelsAndStartsNewPass(t *testing.T) {
	w := newWorld(t, "", 1)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(time.Second)
	w.ResolveEndpoints([]string{lbtest.V4c}, []string{lbtest.V4b})
	w.Advance(20*time.Second + 500*ms)
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, lbtest.V4a), at(250*ms, lbtest.V4b), at(time.Second, lbtest.V4c))
	expect(t, "shutdowns", lbtest.Shutdowns(evs), at(time.Second, lbtest.V4a))
	// lbtest.V4b is reached at 1.25 s while CONNECTING: no Connect call then. Its
	// attempt fails at 20.25 s and lbtest.V4c's at 21 s, ending the pass; lbtest.V4b's
	// backoff ends at 21.25 s and it is reconnected.
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(250*ms, lbtest.V4b), at(time.Second, lbtest.V4c), at(21250*ms, lbtest.V4b))
	expect(t, "timers", lbtest.Timers(evs),
		at(0, "start "+cad+" 250ms"), at(250*ms, "fire "+cad),
		at(time.Second, "start "+cad+" 250ms"), at(1250*ms, "fire "+cad))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(21*time.Second, "TRANSIENT_FAILURE"))
}

// TestPickFirst_ConnectionLost_IdleWithoutReconnect verifies A62, Background
// (kept by A62): a lost connection makes pick_first IDLE; it reconnects only
// when an RPC (or ExitIdle) asks, starting a new pass.
func TestPickFirst_ConnectionLost_IdleWithoutReconnect(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(time.Second)
	w.SetFault(lbtest.V4a, sim.FaultDown)
	w.Advance(500 * ms)
	w.SetFault(lbtest.V4a, sim.FaultNone)
	w.Advance(8500 * ms)
	if got := w.State(); got != connectivity.Idle {
		t.Fatalf("state at 10 s = %v, want IDLE", got)
	}
	w.StartRPC("r1", sim.RPCOptions{})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(10*time.Second, lbtest.V4a))
	expect(t, "states", lbtest.States(evs),
		at(0, "CONNECTING"), at(2*ms, "READY"), at(time.Second, "IDLE"),
		at(10*time.Second, "CONNECTING"), at(10002*ms, "READY"))
	expect(t, "timers", lbtest.Timers(evs),
		at(0, "start "+cad+" 250ms"), at(2*ms, "stop "+cad),
		at(10*time.Second, "start "+cad+" 250ms"), at(10002*ms, "stop "+cad))
	if r := lbtest.RPCResult(t, evs, "r1"); r.Backend != "b0" || r.T != 10003*ms {
		t.Errorf("r1 = %q at %v (%s), want b0 at 10.003 s", r.Backend, r.T, r.Err)
	}
}

// TestPickFirst_ConnectionLost_ExitIdleStartsNewPass verifies A62, Background:
// ExitIdle reconnects an IDLE pick_first.
func TestPickFirst_ConnectionLost_ExitIdleStartsNewPass(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.ResolveEndpoints([]string{lbtest.V4a})
	w.Advance(time.Second)
	w.SetFault(lbtest.V4a, sim.FaultDown)
	w.SetFault(lbtest.V4a, sim.FaultNone)
	w.Advance(time.Second)
	w.ExitIdle()
	w.Advance(time.Second)
	expect(t, "states", lbtest.States(w.Events()),
		at(0, "CONNECTING"), at(2*ms, "READY"), at(time.Second, "IDLE"),
		at(2*time.Second, "CONNECTING"), at(2002*ms, "READY"))
}

// TestPickFirst_AddressList_SameAddressTwiceInMixedFamilies verifies A61,
// Address List Handling in pick_first: an address listed in two endpoints
// gets one subchannel and one attempt, and the pass ends after one failure
// per distinct address, families interleaved.
func TestPickFirst_AddressList_SameAddressTwiceInMixedFamilies(t *testing.T) {
	w := newWorld(t, "", 1)
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V4b}, []string{lbtest.V4a, lbtest.V6a})
	w.Advance(21 * time.Second)
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, lbtest.V4a), at(250*ms, lbtest.V6a), at(500*ms, lbtest.V4b))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(20500*ms, "TRANSIENT_FAILURE"))
}

// TestPickFirst_AddressList_FamiliesInterleaved verifies A61, Address List
// Handling in pick_first, step 3 (RFC 8305 section 4): a DNS-style list
// sorted by family is tried alternating families, led by the first one.
func TestPickFirst_AddressList_FamiliesInterleaved(t *testing.T) {
	w := newWorld(t, "", 1)
	w.ResolveEndpoints([]string{lbtest.V6a}, []string{lbtest.V6b}, []string{lbtest.V6c}, []string{lbtest.V4a})
	w.Advance(time.Second)
	expect(t, "connects", lbtest.Connects(w.Events()), at(0, lbtest.V6a), at(250*ms, lbtest.V4a), at(500*ms, lbtest.V6b), at(750*ms, lbtest.V6c))
}

// TestPickFirst_Shuffle_SeededAndNeverWithinEndpoint verifies A61, Address
// List Handling in pick_first, step 1: A62's shuffleAddressList reorders
// endpoints through the clock's randomness (the same seed, the same order)
// and never the addresses inside an endpoint.
func TestPickFirst_Shuffle_SeededAndNeverWithinEndpoint(t *testing.T) {
	var eps [][]string
	for i := 1; i <= 4; i++ {
		eps = append(eps, []string{fmt.Sprintf("198.18.0.%d:443", i), fmt.Sprintf("[fd00:c0f::%d]:443", i)})
	}
	run := func(cfg string, seed uint64) []string {
		w := newWorld(t, cfg, seed)
		w.ResolveEndpoints(eps...)
		w.Advance(2 * time.Second)
		var order []string
		for _, c := range lbtest.Connects(w.Events()) {
			order = append(order, c.What)
		}
		if len(order) != 8 {
			t.Fatalf("seed %d: %d attempts in 2 s, want 8: %v", seed, len(order), order)
		}
		return order
	}
	if got, want := run("", 1), strings.Join(append(append(append(eps[0], eps[1]...), eps[2]...), eps[3]...), " "); strings.Join(got, " ") != want {
		t.Fatalf("without shuffle: %v, want %v", got, want)
	}
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 8; seed++ {
		a := run(`{"shuffleAddressList": true}`, seed)
		if b := run(`{"shuffleAddressList": true}`, seed); strings.Join(a, " ") != strings.Join(b, " ") {
			t.Fatalf("seed %d: %v, then %v", seed, a, b)
		}
		for i := 0; i < 8; i += 2 {
			v4 := strings.TrimSuffix(a[i], ":443")
			if !strings.HasPrefix(v4, "198.18.0.") || a[i+1] != "[fd00:c0f::"+strings.TrimPrefix(v4, "198.18.0.")+"]:443" {
				t.Fatalf("seed %d: an endpoint was split or reordered: %v", seed, a)
			}
		}
		orders[strings.Join(a, " ")] = true
	}
	if len(orders) < 3 {
		t.Fatalf("8 seeds gave %d distinct orders, want at least 3", len(orders))
	}
}

// TestPickFirst_TFSubchannelIdleBeforePassReachesIt_IsConnected verifies A61,
// Happy Eyeballs in the pick_first LB Policy: a reused subchannel in backoff
// when a pass starts is connected when the pass reaches it if its backoff
// has ended by then, so attempts keep going.
func TestPickFirst_TFSubchannelIdleBeforePassReachesIt_IsConnected(t *testing.T) {
	w := newWorld(t, `{"connectionAttemptDelay": "2s"}`, 1)
	w.AddBackend("b0", lbtest.V4a)
	w.SetFault(lbtest.V4a, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a})
	w.Advance(500 * ms) // lbtest.V4a failed at 1 ms; backoff until 1.001 s
	w.ResolveEndpoints([]string{lbtest.V4c}, []string{lbtest.V4a})
	w.Advance(1500 * ms)
	w.SetFault(lbtest.V4a, sim.FaultNone)
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(500*ms, lbtest.V4c), at(2500*ms, lbtest.V4a))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(1*ms, "TRANSIENT_FAILURE"), at(2502*ms, "READY"))
}

// TestPickFirst_StickyTF_NewListWhileSubchannelsInBackoff verifies A61 and
// A62: a new list in sticky TRANSIENT_FAILURE starts a pass that counts the
// subchannels in backoff as failed, stays in TRANSIENT_FAILURE, asks for
// re-resolution, and reconnects them when their backoff ends.
func TestPickFirst_StickyTF_NewListWhileSubchannelsInBackoff(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.AddBackend("b1", lbtest.V4b)
	w.SetFault(lbtest.V4a, sim.FaultReset)
	w.SetFault(lbtest.V4b, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(500 * ms)
	w.ResolveEndpoints([]string{lbtest.V4b}, []string{lbtest.V4a})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, lbtest.V4a), at(1*ms, lbtest.V4b))
	expect(t, "shutdowns", lbtest.Shutdowns(evs))
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(1*ms, lbtest.V4b), at(1001*ms, lbtest.V4a), at(1002*ms, lbtest.V4b))
	expect(t, "states", lbtest.States(evs),
		at(0, "CONNECTING"), at(2*ms, "TRANSIENT_FAILURE"),
		at(500*ms, "TRANSIENT_FAILURE"), at(1003*ms, "TRANSIENT_FAILURE"))
	expect(t, "resolve-now", lbtest.ResolveNows(evs), at(2*ms, "resolve-now"), at(500*ms, "resolve-now"), at(1003*ms, "resolve-now"))
}

// TestPickFirst_PickerError_CarriesLastConnectionError verifies A61, Use
// pick_first as the Universal Leaf Policy (errors stay useful): failing RPCs
// name the address and the connection error.
func TestPickFirst_PickerError_CarriesLastConnectionError(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.SetFault(lbtest.V4a, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a})
	w.Advance(100 * ms)
	w.StartRPC("r1", sim.RPCOptions{})
	w.Advance(100 * ms)
	r := lbtest.RPCResult(t, w.Events(), "r1")
	if r.Code != "UNAVAILABLE" || !strings.Contains(r.Err, lbtest.V4a) || !strings.Contains(r.Err, "connection refused") {
		t.Fatalf("r1 = %s %q, want Unavailable naming %s and the refusal", r.Code, r.Err, lbtest.V4a)
	}
}

// TestPickFirst_HealthReporting_FollowsChosenSubchannelHealth verifies A61,
// Generic Health Reporting Mechanism: turned on by a parent, the reported
// state follows the chosen subchannel's health without connection churn;
// left off, health is not watched.
func TestPickFirst_HealthReporting_FollowsChosenSubchannelHealth(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("enabled=%v", on), func(t *testing.T) {
			w := newWorld(t, "", 1)
			w.AddBackend("b0", lbtest.V4a)
			w.SetHealth(lbtest.V4a, connectivity.TransientFailure)
			s := resolver.State{Endpoints: []resolver.Endpoint{{Addresses: []resolver.Address{{Addr: lbtest.V4a}}}}}
			if on {
				s = pickfirst.EnableHealthReporting(s)
			}
			w.Resolve(s)
			w.Advance(time.Second)
			w.SetHealth(lbtest.V4a, connectivity.Ready)
			w.Advance(time.Second)
			evs := w.Events()
			if on {
				expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(2*ms, "TRANSIENT_FAILURE"), at(time.Second, "READY"))
			} else {
				expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(2*ms, "READY"))
				if n := len(lbtest.Pick(evs, trace.KindSubchannelHealth, func(trace.Event) string { return "" })); n != 0 {
					t.Errorf("%d health updates delivered without health reporting", n)
				}
			}
			expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a))
			expect(t, "shutdowns", lbtest.Shutdowns(evs))
		})
	}
}

// TestPickFirst_Trace_RepeatableForASeed verifies DESIGN.md's virtual-time
// promise for this policy: the same stimuli and seed give the same trace,
// shutdown order included.
func TestPickFirst_Trace_RepeatableForASeed(t *testing.T) {
	run := func() string {
		w := newWorld(t, `{"shuffleAddressList": true}`, 7)
		w.AddBackend("b3", lbtest.V6b)
		w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V6a}, []string{lbtest.V4b}, []string{lbtest.V6b}, []string{lbtest.V4c})
		w.Advance(2 * time.Second)
		w.ResolveEndpoints([]string{lbtest.V6b}, []string{lbtest.V4c})
		w.Advance(2 * time.Second)
		return lbtest.Dump(w.Events())
	}
	first := run()
	if !strings.Contains(first, "subchannel-shutdown") {
		t.Fatalf("scenario shut nothing down:\n%s", first)
	}
	for i := 0; i < 5; i++ {
		if again := run(); again != first {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", i+2, again, first)
		}
	}
}
