package roundrobin_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

// backendsOf starts n RPCs named prefix0..prefixN-1, lets them finish, and
// returns the backend that answered each.
func backendsOf(t *testing.T, w *sim.Channel, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = prefix + string(rune('0'+i))
		w.StartRPC(ids[i], sim.RPCOptions{})
	}
	w.Advance(100 * ms)
	evs := w.Events()
	out := make([]string, n)
	for i, id := range ids {
		r := lbtest.RPCResult(t, evs, id)
		out[i] = r.Backend
		if r.Backend == "" {
			out[i] = r.Code + ": " + r.Err
		}
	}
	return out
}

// TestRoundRobin_OneAddressPerEndpoint verifies A61, Use pick_first as the
// Universal Leaf Policy: each dual-stack endpoint gets its own pick_first
// child, which connects one address; RPCs alternate between the endpoints.
func TestRoundRobin_OneAddressPerEndpoint(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a, lbtest.V6a)
	w.AddBackend("b1", lbtest.V4b, lbtest.V6b)
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V6a}, []string{lbtest.V4b, lbtest.V6b})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, lbtest.V4a), at(0, lbtest.V4b))
	expect(t, "timers", lbtest.Timers(evs),
		at(0, "start "+cad+" 250ms"), at(0, "start "+cad+" 250ms"),
		at(2*ms, "stop "+cad), at(2*ms, "stop "+cad))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(2*ms, "READY"), at(2*ms, "READY"))
	got := backendsOf(t, w, "r", 4)
	n := map[string]int{}
	for i, b := range got {
		n[b]++
		if i > 0 && got[i-1] == b {
			t.Errorf("RPCs %d and %d both went to %s: %v", i-1, i, b, got)
		}
	}
	if n["b0"] != 2 || n["b1"] != 2 {
		t.Errorf("RPCs went to %v, want two each to b0 and b1", got)
	}
}

const cad = "connection attempt delay"

// TestRoundRobin_ReorderedEndpointsKeepChildren verifies A61, Address List
// Updates in Petiole Policies (Java/Go): an endpoint is its unordered set of
// addresses, so reordering endpoints and their addresses keeps every child
// and connection.
func TestRoundRobin_ReorderedEndpointsKeepChildren(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a, lbtest.V6a)
	w.AddBackend("b1", lbtest.V4b, lbtest.V6b)
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V6a}, []string{lbtest.V4b, lbtest.V6b})
	w.Advance(time.Second)
	w.ResolveEndpoints([]string{lbtest.V6b, lbtest.V4b}, []string{lbtest.V6a, lbtest.V4a})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, lbtest.V4a), at(0, lbtest.V4b))
	expect(t, "shutdowns", lbtest.Shutdowns(evs))
	for _, s := range lbtest.States(evs) {
		if s.T >= time.Second && s.What != "READY" {
			t.Errorf("state %v after the reordered update", s)
		}
	}
	if got := backendsOf(t, w, "r", 2); got[0] == got[1] {
		t.Errorf("RPCs went to %v, want both backends", got)
	}
}

// TestRoundRobin_ChangedAddressSetIsNewEndpoint verifies A61, Address List
// Updates in Petiole Policies: adding an address to an endpoint makes it a
// new endpoint, with a new child.
func TestRoundRobin_ChangedAddressSetIsNewEndpoint(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a, lbtest.V6a)
	w.ResolveEndpoints([]string{lbtest.V4a})
	w.Advance(time.Second)
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V6a})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, lbtest.V4a), at(time.Second, lbtest.V4a))
	expect(t, "shutdowns", lbtest.Shutdowns(evs), at(time.Second, lbtest.V4a))
}

// TestRoundRobin_ChildrenRunOnTheParentsClock verifies that the children's
// ClientConn forwards the clock: the Happy Eyeballs timer inside an
// endpoint runs on the simulator's virtual time (A61, 250 ms).
func TestRoundRobin_ChildrenRunOnTheParentsClock(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V6a)
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V6a})
	w.Advance(time.Second)
	evs := w.Events()
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(250*ms, lbtest.V6a))
	expect(t, "states", lbtest.States(evs), at(0, "CONNECTING"), at(252*ms, "READY"))
}

// TestRoundRobin_AllFailing_PickerKeepsChildError verifies A61, Use
// pick_first as the Universal Leaf Policy: when every endpoint is in
// TRANSIENT_FAILURE, RPCs fail with a child's connection error.
func TestRoundRobin_AllFailing_PickerKeepsChildError(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.AddBackend("b1", lbtest.V4b)
	w.SetFault(lbtest.V4a, sim.FaultReset)
	w.SetFault(lbtest.V4b, sim.FaultReset)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(100 * ms)
	expect(t, "states", lbtest.States(w.Events()), at(0, "CONNECTING"), at(1*ms, "TRANSIENT_FAILURE"))
	for _, e := range backendsOf(t, w, "r", 2) {
		if !strings.HasPrefix(e, "UNAVAILABLE: ") || !strings.Contains(e, "connection refused") ||
			!(strings.Contains(e, lbtest.V4a) || strings.Contains(e, lbtest.V4b)) || !strings.Contains(e, "conform_round_robin") {
			t.Errorf("RPC result %q, want UNAVAILABLE naming the policy, an address and the refusal", e)
		}
	}
}

// TestRoundRobin_IdleChildReconnectsAtOnce verifies round_robin's rule
// (restated in A58, Subchannel connectivity state notification): a child
// that reports IDLE after losing its connection is asked to connect at once,
// while the other endpoint keeps the policy READY.
func TestRoundRobin_IdleChildReconnectsAtOnce(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.AddBackend("b1", lbtest.V4b)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(time.Second)
	w.SetFault(lbtest.V4a, sim.FaultDown)
	w.Advance(500 * ms)
	w.SetFault(lbtest.V4a, sim.FaultNone)
	w.Advance(time.Second)
	evs := w.Events()
	var v4aConnects []lbtest.Stamped
	for _, c := range lbtest.Connects(evs) {
		if c.What == lbtest.V4a {
			v4aConnects = append(v4aConnects, c)
		}
	}
	// Lost at 1 s, refused at 1.001 s, backoff 1 s, connected at 2.003 s.
	expect(t, "connects to "+lbtest.V4a, v4aConnects, at(0, lbtest.V4a), at(time.Second, lbtest.V4a), at(2001*ms, lbtest.V4a))
	for _, s := range lbtest.States(evs) {
		if s.T > 2*ms && s.What != "READY" {
			t.Errorf("state %v while b1 was READY", s)
		}
	}
	if got := backendsOf(t, w, "r", 2); got[0] == got[1] {
		t.Errorf("RPCs went to %v, want both backends again", got)
	}
}

// TestRoundRobin_UnhealthyEndpointGetsNoPicks verifies A61, Generic Health
// Reporting Mechanism: round_robin turns health reporting on in its children,
// so an unhealthy endpoint gets no RPCs and keeps its connection.
func TestRoundRobin_UnhealthyEndpointGetsNoPicks(t *testing.T) {
	w := newWorld(t, "", 1)
	w.AddBackend("b0", lbtest.V4a)
	w.AddBackend("b1", lbtest.V4b)
	w.SetHealth(lbtest.V4a, connectivity.TransientFailure)
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
	w.Advance(time.Second)
	if got := backendsOf(t, w, "r", 4); strings.Join(got, ",") != "b1,b1,b1,b1" {
		t.Errorf("RPCs went to %v, want all to b1", got)
	}
	w.SetHealth(lbtest.V4a, connectivity.Ready)
	n := map[string]int{}
	for _, b := range backendsOf(t, w, "s", 4) {
		n[b]++
	}
	if n["b0"] != 2 || n["b1"] != 2 {
		t.Errorf("after b0 turned healthy RPCs went %v, want two each", n)
	}
	evs := w.Events()
	expect(t, "shutdowns", lbtest.Shutdowns(evs))
	expect(t, "connects", lbtest.Connects(evs), at(0, lbtest.V4a), at(0, lbtest.V4b))
}

// TestRoundRobin_NoEndpoints_TransientFailure verifies that an empty
// resolver update is refused (ErrBadResolverState) and fails RPCs.
func TestRoundRobin_NoEndpoints_TransientFailure(t *testing.T) {
	w := newWorld(t, "", 1)
	if err := w.Resolve(resolver.State{}); err == nil {
		t.Fatal("empty update accepted")
	}
	if got := w.State(); got != connectivity.TransientFailure {
		t.Fatalf("state = %v, want TRANSIENT_FAILURE", got)
	}
}
