package match

import (
	"fmt"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	_ "github.com/conformlab/conform/reference/pickfirst"
	_ "github.com/conformlab/conform/reference/roundrobin"
)

// Addresses: b0 is dual-stack, b1 has IPv4 only.
const (
	v4  = "198.18.0.10:443"
	v6  = "[fd00:c0f::10]:443"
	b1  = "198.18.0.11:443"
	pf  = "conform_pick_first"
	rr  = "conform_round_robin"
	cfg = `{"shuffleAddressList":false}`
)

// world starts a simulated channel with backends b0 (v4, v6) and b1.
func world(t *testing.T, policy, config string) *sim.Channel {
	t.Helper()
	w, err := sim.New(policy, config, sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.AddBackend("b0", v4, v6)
	w.AddBackend("b1", b1)
	return w
}

func resolve(t *testing.T, w *sim.Channel, endpoints ...[]string) {
	t.Helper()
	if err := w.ResolveEndpoints(endpoints...); err != nil {
		t.Fatal(err)
	}
}

// happyEyeballs is pick_first over one dual-stack endpoint, addresses in
// the given order, the first dropping SYNs: the second is attempted after
// the Connection Attempt Delay and becomes READY.
func happyEyeballs(t *testing.T, delay string, first, second string) []trace.Event {
	w := world(t, pf, `{"shuffleAddressList":false,"connectionAttemptDelay":"`+delay+`"}`)
	w.SetFault(first, sim.FaultDrop)
	resolve(t, w, []string{first, second})
	w.StartRPC("r1", sim.RPCOptions{WaitForReady: true})
	w.Advance(5 * time.Second)
	return w.Events()
}

// refusedThenCleared is pick_first over one dual-stack endpoint whose addresses both
// refuse connections until IPv4 is cleared at 10 s: CONNECTING,
// TRANSIENT_FAILURE while it keeps trying, then READY.
func refusedThenCleared(t *testing.T) []trace.Event {
	w := world(t, pf, cfg)
	w.SetFault(v4, sim.FaultReset)
	w.SetFault(v6, sim.FaultReset)
	resolve(t, w, []string{v4, v6})
	w.Advance(10 * time.Second)
	w.SetFault(v4, sim.FaultNone)
	w.Advance(10 * time.Second)
	return w.Events()
}

// picks sends n RPCs one at a time through policy over b0 (IPv4) and b1,
// once both are READY.
func picks(t *testing.T, policy string, n int) []trace.Event {
	w := world(t, policy, "")
	resolve(t, w, []string{v4}, []string{b1})
	w.Advance(time.Second)
	for i := range n {
		w.StartRPC(fmt.Sprint("r", i), sim.RPCOptions{})
		w.Advance(10 * time.Millisecond)
	}
	return w.Events()
}

// nilTrace is a typed nil trace.
var nilTrace *trace.Trace

// inserted is evs with e inserted before the first event after e.T.
func inserted(evs []trace.Event, e trace.Event) []trace.Event {
	i := 0
	for i < len(evs) && evs[i].T <= e.T {
		i++
	}
	out := append([]trace.Event{}, evs[:i]...)
	out = append(out, e)
	return append(out, evs[i:]...)
}
