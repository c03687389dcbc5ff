package ringhash

import (
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

// TestRingHash_ProactiveConnectionWhileFailing verifies A61, Ring Hash:
// whenever the aggregate is CONNECTING or TRANSIENT_FAILURE and no endpoint
// is CONNECTING, ring_hash asks one IDLE endpoint to connect without any
// pick, one more as each fails; once an address is reachable again the
// children's own retries (A62 sticky TRANSIENT_FAILURE) bring the policy to
// READY with no pick at all.
func TestRingHash_ProactiveConnectionWhileFailing(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	eps := []string{lbtest.V4a, lbtest.V4b, lbtest.V4c}
	for _, a := range eps {
		w.SetFault(a, sim.FaultReset)
	}
	threeBackends(w)
	members := m1(eps...)
	x := walk(ringFor(members...), members, "erin")[0]
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	// One RPC gives up before x has even failed: every later connection
	// attempt is the policy's own.
	w.StartRPC("r1", withKey("erin", sim.RPCOptions{Deadline: ms / 2}))
	w.Advance(500 * ms)
	evs := w.Events()
	if r := lbtest.RPCResult(t, evs, "r1"); r.Code != "DEADLINE_EXCEEDED" || r.T != ms/2 {
		t.Fatalf("r1 ended %s at %v, want DEADLINE_EXCEEDED at 0.5ms", r.Code, r.T)
	}
	// The others in resolver order: at 1 ms x has failed (one failure of
	// three: CONNECTING, A42 rule 4), at 2 ms the second (TRANSIENT_FAILURE,
	// rule 2).
	rest := slices.DeleteFunc(slices.Clone(eps), func(a string) bool { return a == x })
	expect(t, "connects", lbtest.Connects(evs), at(0, x), at(ms, rest[0]), at(2*ms, rest[1]))
	expect(t, "states", distinctStates(evs), at(0, "IDLE"), at(0, "CONNECTING"), at(2*ms, "TRANSIENT_FAILURE"))

	// Every address comes back; the children retry after their 1 s backoff
	// (their sticky TRANSIENT_FAILURE keeps the aggregate failed) and the
	// first to connect makes the policy READY.
	for _, a := range eps {
		w.SetFault(a, sim.FaultNone)
	}
	w.Advance(time.Second)
	evs = w.Events()
	expect(t, "states", distinctStates(evs), at(0, "IDLE"), at(0, "CONNECTING"), at(2*ms, "TRANSIENT_FAILURE"), at(time.Second+3*ms, "READY"))
	expect(t, "connects", lbtest.Connects(evs), at(0, x), at(ms, rest[0]), at(2*ms, rest[1]),
		at(time.Second+ms, x), at(time.Second+2*ms, rest[0]), at(time.Second+3*ms, rest[1]))
}

// TestRingHash_NoProactiveConnectionWhileOneConnecting verifies A61, Ring
// Hash: the proactive attempt is made only when no endpoint is CONNECTING;
// with a hung connection attempt in progress nothing else is connected
// until it fails at its 20 s connect deadline.
func TestRingHash_NoProactiveConnectionWhileOneConnecting(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	eps := []string{lbtest.V4a, lbtest.V4b, lbtest.V4c}
	members := m1(eps...)
	order := walk(ringFor(members...), members, "frank")
	x := order[0]
	w.SetFault(x, sim.FaultReset)
	w.SetFault(order[1], sim.FaultDrop) // hangs
	w.SetFault(order[2], sim.FaultDrop)
	threeBackends(w)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	w.StartRPC("r1", withKey("frank", sim.RPCOptions{Deadline: ms / 2}))
	w.Advance(19 * time.Second)
	evs := w.Events()
	// At 1 ms x fails and one IDLE endpoint is connected (the first in
	// resolver order other than x); its attempt hangs, so no other.
	// (x retries on its own after each backoff: 1 s, then 1.6 s, ...)
	p := eps[slices.IndexFunc(eps, func(a string) bool { return a != x })]
	expect(t, "connects other than x", notTo(lbtest.Connects(evs), x), at(ms, p))
	expect(t, "states", distinctStates(evs), at(0, "IDLE"), at(0, "CONNECTING"))

	w.Advance(2 * time.Second)
	evs = w.Events()
	q := eps[slices.IndexFunc(eps, func(a string) bool { return a != x && a != p })]
	// p's attempt fails at 1 ms + 20 s: two failures, TRANSIENT_FAILURE,
	// and the last IDLE endpoint is connected.
	expect(t, "connects other than x", notTo(lbtest.Connects(evs), x), at(ms, p), at(20*time.Second+ms, q))
	expect(t, "states", distinctStates(evs), at(0, "IDLE"), at(0, "CONNECTING"), at(20*time.Second+ms, "TRANSIENT_FAILURE"))
}

// notTo drops the events about addr.
func notTo(evs []lbtest.Stamped, addr string) []lbtest.Stamped {
	return slices.DeleteFunc(evs, func(s lbtest.Stamped) bool { return s.What == addr })
}
