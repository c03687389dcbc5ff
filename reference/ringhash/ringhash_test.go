package ringhash

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

// threeBackends adds b0, b1, b2 on (lbtest.V4a, lbtest.V6a), (lbtest.V4b, lbtest.V6b), (lbtest.V4c, lbtest.V6c).
func threeBackends(w *sim.Channel) {
	w.AddBackend("b0", lbtest.V4a, lbtest.V6a)
	w.AddBackend("b1", lbtest.V4b, lbtest.V6b)
	w.AddBackend("b2", lbtest.V4c, lbtest.V6c)
}

var backendOf = map[string]string{lbtest.V4a: "b0", lbtest.V6a: "b0", lbtest.V4b: "b1", lbtest.V6b: "b1", lbtest.V4c: "b2", lbtest.V6c: "b2"}

// TestRingHash_SameHeaderValueSameEndpoint verifies A42, Picker Behavior:
// a request's hash (here XXH64 of its header value) selects the endpoint
// closest to it on the ring, so the same value always reaches the same
// endpoint, whatever the order of the resolver's endpoints.
func TestRingHash_SameHeaderValueSameEndpoint(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	ks := keys(20)
	first := keyed(t, w, "a-", ks, 100*ms)
	w.ResolveEndpoints([]string{lbtest.V4c}, []string{lbtest.V4a}, []string{lbtest.V4b})
	second := keyed(t, w, "b-", ks, 100*ms)
	third := keyed(t, w, "c-", ks, 100*ms)

	members := m1(lbtest.V4a, lbtest.V4b, lbtest.V4c)
	r := ringFor(members...)
	used := map[string]bool{}
	for i, k := range ks {
		want := backendOf[walk(r, members, k)[0]]
		if first[i] != want || second[i] != want || third[i] != want {
			t.Errorf("key %s reached %s, %s, %s; want %s each time", k, first[i], second[i], third[i], want)
		}
		used[want] = true
	}
	if len(used) < 2 {
		t.Errorf("20 keys all hash to one endpoint: %v", used)
	}
}

// TestRingHash_ChildrenCreatedLazily verifies A61, Ring Hash: ring_hash
// creates an endpoint's pick_first child only when it wants to connect, so
// a resolver update (or the channel's ExitIdle) alone connects nothing (the policy reports IDLE) and a
// pick creates and connects only the endpoint it lands on.
func TestRingHash_ChildrenCreatedLazily(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V6a}, []string{lbtest.V4b, lbtest.V6b}, []string{lbtest.V4c, lbtest.V6c})
	w.Advance(time.Second)
	w.ExitIdle() // the channel's ExitIdle connects nothing either
	w.Advance(4 * time.Second)
	evs := w.Events()
	expect(t, "subchannels before any RPC", lbtest.Created(evs))
	expect(t, "states before any RPC", lbtest.States(evs), at(0, "IDLE"))

	members := m1(lbtest.V4a, lbtest.V4b, lbtest.V4c)
	target := walk(ringFor(members...), members, "alice")[0]
	w.StartRPC("r1", withKey("alice", sim.RPCOptions{}))
	w.Advance(time.Second)
	evs = w.Events()
	expect(t, "subchannels", lbtest.Created(evs), at(5*time.Second, target))
	expect(t, "connects", lbtest.Connects(evs), at(5*time.Second, target))
	expect(t, "states", distinctStates(evs), at(0, "IDLE"), at(5*time.Second, "CONNECTING"), at(5*time.Second+2*ms, "READY"))
	if r := lbtest.RPCResult(t, evs, "r1"); r.Backend != backendOf[target] || r.T != 5*time.Second+3*ms {
		t.Errorf("r1 answered by %q at %v, want %s at 5.003s", r.Backend, r.T, backendOf[target])
	}
}

// TestRingHash_PickOnIdleChildConnectsIt verifies A42, Subchannel State
// Handling: an endpoint whose connection is lost is IDLE and is not
// reconnected on its own (the policy reports IDLE); the next pick that
// lands on it triggers its connection attempt and is queued until READY.
func TestRingHash_PickOnIdleChildConnectsIt(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	members := m1(lbtest.V4a, lbtest.V4b, lbtest.V4c)
	target := walk(ringFor(members...), members, "bob")[0]
	keyed(t, w, "warm-", []string{"bob"}, 100*ms)

	w.SetFault(target, sim.FaultDown) // kills the connection
	w.SetFault(target, sim.FaultNone)
	w.Advance(10*time.Second - 100*ms)
	evs := w.Events()
	expect(t, "connects while IDLE", lbtest.Connects(evs), at(0, target))
	expect(t, "states", distinctStates(evs), at(0, "IDLE"), at(0, "CONNECTING"), at(2*ms, "READY"), at(100*ms, "IDLE"))

	w.StartRPC("r1", withKey("bob", sim.RPCOptions{}))
	w.Advance(time.Second)
	evs = w.Events()
	expect(t, "connects", lbtest.Connects(evs), at(0, target), at(10*time.Second, target))
	if r := lbtest.RPCResult(t, evs, "r1"); r.Backend != backendOf[target] || r.T != 10*time.Second+3*ms {
		t.Errorf("r1 answered by %q at %v, want %s at 10.003s", r.Backend, r.T, backendOf[target])
	}
}

// TestRingHash_TransientFailureEndpointIsPassedOver verifies A61, Ring
// Hash, the picker: an endpoint in TRANSIENT_FAILURE is skipped and the
// pick handled by the next endpoint along the ring (here IDLE: it is asked
// to connect and the pick queued until it is READY).
func TestRingHash_TransientFailureEndpointIsPassedOver(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	eps := []string{lbtest.V4a, lbtest.V4b, lbtest.V4c}
	members := m1(eps...)
	order := walk(ringFor(members...), members, "carol")
	x, y := order[0], order[1]
	w.SetFault(x, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	w.StartRPC("r1", withKey("carol", sim.RPCOptions{WaitForReady: true}))
	w.Advance(100 * ms)
	evs := w.Events()

	// At 1 ms x fails: the aggregate is CONNECTING (A42 rule 4) with no
	// endpoint CONNECTING, so the policy connects the first IDLE endpoint
	// in resolver order (p); the queued pick then passes over x to y.
	p := eps[slices.IndexFunc(eps, func(a string) bool { return a != x })]
	want := []lbtest.Stamped{at(0, x), at(ms, p)}
	if y != p {
		want = append(want, at(ms, y))
	}
	expect(t, "connects", lbtest.Connects(evs), want...)
	if r := lbtest.RPCResult(t, evs, "r1"); r.Backend != backendOf[y] || r.T != 4*ms {
		t.Errorf("r1 answered by %q at %v, want %s (the next endpoint on the ring) at 4ms", r.Backend, r.T, backendOf[y])
	}
}

// TestRingHash_AllTransientFailureFailsWithFirstEndpointsError verifies
// A61, Ring Hash, the picker: when every endpoint is in TRANSIENT_FAILURE
// the pick fails with the failure of the endpoint the hash selected.
func TestRingHash_AllTransientFailureFailsWithFirstEndpointsError(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	for _, a := range []string{lbtest.V4a, lbtest.V4b, lbtest.V4c} {
		w.SetFault(a, sim.FaultReset)
	}
	threeBackends(w)
	eps := []string{lbtest.V4a, lbtest.V4b, lbtest.V4c}
	members := m1(eps...)
	order := walk(ringFor(members...), members, "dave")
	x, y := order[0], order[1]
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	w.StartRPC("r1", withKey("dave", sim.RPCOptions{}))
	w.Advance(100 * ms)
	evs := w.Events()
	r := lbtest.RPCResult(t, evs, "r1")
	if r.Code != "UNAVAILABLE" || !strings.Contains(r.Err, "every endpoint is in TRANSIENT_FAILURE") || !strings.Contains(r.Err, x) {
		t.Errorf("r1 ended %s %q at %v; want UNAVAILABLE naming every endpoint failed and %s's error", r.Code, r.Err, r.T, x)
	}
	// x fails at 1 ms; then the proactive rule connects the first IDLE
	// endpoint in resolver order (p) and the pick, passing over x, the next
	// one on the ring (y). If they differ, all three have failed at 2 ms;
	// otherwise the third is connected at 2 ms and fails at 3 ms.
	p := eps[slices.IndexFunc(eps, func(a string) bool { return a != x })]
	wantT := 2 * ms
	if p == y {
		wantT = 3 * ms
	}
	if r.T != wantT {
		t.Errorf("r1 failed at %v, want %v (once the last endpoint failed)", r.T, wantT)
	}
}

// TestRingHash_NoEndpointsIsTransientFailure verifies A42, Aggregated
// Connectivity State, rule 6, with no endpoint at all: an empty update is
// refused (so the resolver is asked again) and reported as
// TRANSIENT_FAILURE; a resolver error before any endpoint fails RPCs with
// that error.
func TestRingHash_NoEndpointsIsTransientFailure(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	w.ResolverError(errors.New("no such host"))
	w.StartRPC("r1", withKey("heidi", sim.RPCOptions{}))
	if err := w.ResolveEndpoints(); !errors.Is(err, balancer.ErrBadResolverState) {
		t.Errorf("empty update: %v, want ErrBadResolverState", err)
	}
	w.StartRPC("r2", withKey("heidi", sim.RPCOptions{}))
	evs := w.Events()
	expect(t, "states", lbtest.States(evs), at(0, "TRANSIENT_FAILURE"), at(0, "TRANSIENT_FAILURE"))
	if r := lbtest.RPCResult(t, evs, "r1"); r.Code != "UNAVAILABLE" || !strings.Contains(r.Err, "no such host") {
		t.Errorf("r1 ended %s %q, want UNAVAILABLE with the resolver's error", r.Code, r.Err)
	}
	if r := lbtest.RPCResult(t, evs, "r2"); r.Code != "UNAVAILABLE" || !strings.Contains(r.Err, "no endpoints") {
		t.Errorf("r2 ended %s %q, want UNAVAILABLE saying there are no endpoints", r.Code, r.Err)
	}
}
