package compare

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	_ "github.com/conformlab/conform/reference/pickfirst"
)

// Addresses of the Happy Eyeballs scenario: one dual-stack backend whose
// IPv4 address drops SYNs.
const (
	v4 = "198.18.0.10:443"
	v6 = "[fd00:c0f::10]:443"
)

// happyEyeballs runs conform_pick_first with the given Connection Attempt
// Delay on a dual-stack backend whose IPv4 address drops SYNs, with one
// wait-for-ready RPC: sc1 tries IPv4, sc2 tries IPv6 after the delay and
// becomes READY.
func happyEyeballs(t *testing.T, delay string) []trace.Event {
	t.Helper()
	w, err := sim.New("conform_pick_first",
		`{"shuffleAddressList":false,"connectionAttemptDelay":"`+delay+`"}`, sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddBackend("b0", v4, v6)
	w.SetFault(v4, sim.FaultDrop)
	if err := w.ResolveEndpoints([]string{v4, v6}); err != nil {
		t.Fatal(err)
	}
	w.StartRPC("r1", sim.RPCOptions{WaitForReady: true})
	w.Advance(5 * time.Second)
	return w.Events()
}

// indexOf is the index of the first event of evs for which p holds.
func indexOf(t *testing.T, evs []trace.Event, p func(trace.Event) bool) int {
	t.Helper()
	for i, e := range evs {
		if p(e) {
			return i
		}
	}
	t.Fatal("no such event in the trace")
	return -1
}

func kindState(k trace.Kind, sc, state string) func(trace.Event) bool {
	return func(e trace.Event) bool { return e.Kind == k && e.Subchannel == sc && e.State == state }
}

func without(evs []trace.Event, i int) []trace.Event {
	out := append([]trace.Event{}, evs[:i]...)
	return append(out, evs[i+1:]...)
}

func inserted(evs []trace.Event, i int, e trace.Event) []trace.Event {
	out := append([]trace.Event{}, evs[:i]...)
	out = append(out, e)
	return append(out, evs[i:]...)
}

// renamed gives subchannels new ids, as another run would number them.
func renamed(evs []trace.Event, ids map[string]string) []trace.Event {
	out := append([]trace.Event{}, evs...)
	for i := range out {
		if id, ok := ids[out[i].Subchannel]; ok {
			out[i].Subchannel = id
		}
	}
	return out
}
