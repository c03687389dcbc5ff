package priority

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/hierarchy"
	"github.com/conformlab/conform/reference/internal/lbtest"
	_ "github.com/conformlab/conform/reference/pickfirst" // conform_pick_first, the children
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

const (
	addr0 = "198.18.0.1:443"
	addr1 = "198.18.0.2:443"
	pfCfg = `{"children": {
		"p0": {"config": [{"conform_pick_first": {}}]},
		"p1": {"config": [{"conform_pick_first": {}}]}},
		"priorities": ["p0", "p1"]}`
)

// pfWorld is a priority over two conform_pick_first children, p0 on backend
// b0 and p1 on b1, in the simulator's network.
func pfWorld(t *testing.T, faultOn0 sim.Fault) *sim.Channel {
	t.Helper()
	w := lbtest.NewChannel(t, Name, pfCfg, sim.Options{Seed: 7})
	w.AddBackend("b0", addr0)
	w.AddBackend("b1", addr1)
	w.SetFault(addr0, faultOn0)
	s := resolver.State{Endpoints: []resolver.Endpoint{
		hierarchy.SetOnEndpoint(resolver.Endpoint{Addresses: []resolver.Address{{Addr: addr0}}}, []string{"p0"}),
		hierarchy.SetOnEndpoint(resolver.Endpoint{Addresses: []resolver.Address{{Addr: addr1}}}, []string{"p1"}),
	}}
	if err := w.Resolve(s); err != nil {
		t.Fatal(err)
	}
	return w
}

// served returns the backend that answered RPC id and when, or "" if it has
// not finished.
func served(w *sim.Channel, id string) (string, time.Duration) {
	for _, e := range w.Events() {
		if e.Kind == trace.KindRPCResult && e.RPC == id {
			return e.Backend, e.T
		}
	}
	return "", 0
}

// TestPriority_PickFirstChildren_DroppedPrimaryFailsOverAt10s verifies A56,
// Child Connectivity State Tracking, end to end: the primary's SYNs are
// dropped, so its pick_first stays CONNECTING (its connect deadline is 20 s);
// the failover timer moves a waiting RPC to the secondary at 10 s.
func TestPriority_PickFirstChildren_DroppedPrimaryFailsOverAt10s(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			w := pfWorld(t, sim.FaultDrop)
			w.StartRPC("r1", sim.RPCOptions{WaitForReady: true})
			w.Advance(10*sec - 1)
			if b, _ := served(w, "r1"); b != "" {
				t.Fatalf("r1 served by %s before the failover timer", b)
			}
			w.Advance(100 * time.Millisecond)
			b, at := served(w, "r1")
			lbtest.Eq(t, "r1 backend", b, "b1")
			if at < 10*sec {
				t.Fatalf("r1 served at %v, before 10s", at)
			}
			lbtest.Eq(t, "failover timers", timers(w, "failover")[:3], []string{"start 10s @0s", "fire @10s", "start 10s @10s"})
		})
	}
}

// TestPriority_PickFirstChildren_RefusedPrimaryThenBack verifies A56,
// Algorithm for Choosing a Priority and Child Lifetime Management, end to
// end: a refused primary (pick_first in TRANSIENT_FAILURE) fails over at
// once, and once it is READY again the primary is used and the secondary
// deactivated for 15 minutes.
func TestPriority_PickFirstChildren_RefusedPrimaryThenBack(t *testing.T) {
	w := pfWorld(t, sim.FaultReset)
	w.StartRPC("r1", sim.RPCOptions{WaitForReady: true})
	w.Advance(100 * time.Millisecond)
	b, at := served(w, "r1")
	lbtest.Eq(t, "r1 backend", b, "b1")
	if at >= sec {
		t.Fatalf("r1 served at %v: failover waited", at)
	}
	lbtest.Eq(t, "failover timers", timers(w, "failover"), []string{"start 10s @0s", "stop @1ms", "start 10s @1ms", "stop @3ms"})
	w.SetFault(addr0, sim.FaultNone)
	if !w.AdvanceUntil(func() bool { return len(timers(w, "deactivation")) > 0 }, 5*sec) {
		t.Fatal("secondary never deactivated after the primary recovered")
	}
	lbtest.Eq(t, "state", w.State(), connectivity.Ready)
	w.StartRPC("r2", sim.RPCOptions{WaitForReady: true})
	w.Advance(100 * time.Millisecond)
	b, _ = served(w, "r2")
	lbtest.Eq(t, "r2 backend", b, "b0")
	w.Advance(15 * minute)
	lbtest.Eq(t, "deactivation timers", len(timers(w, "deactivation")), 2)
	if tm := timers(w, "deactivation"); tm[1][:4] != "fire" {
		t.Fatalf("deactivation timers = %v", tm)
	}
}
