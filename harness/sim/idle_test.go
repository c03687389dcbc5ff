package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// channelStates lists the channel-state events, "state@time".
func channelStates(ev []trace.Event) []string {
	var out []string
	for _, e := range kinds(ev, trace.KindChannelState, "") {
		out = append(out, e.State+"@"+e.T.String())
	}
	return out
}

// A62, Use sticky-TF by default: with no RPC activity for the idle timeout
// the channel goes IDLE, its subchannels torn down; counted from the last
// RPC's end. The next RPC builds a new balancer on the last resolver state,
// which connects afresh and answers it.
func TestIdleTimeout_IdleAfterLastActivityThenFreshStart(t *testing.T) {
	w := newChannel(t, `{"failPicks":true,"reconnect":true}`, Options{Seed: 1, IdleTimeout: time.Second})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultReset)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(300 * time.Millisecond)
	w.StartRPC("r0", RPCOptions{}) // fails at once: the last activity, at 300 ms
	w.Advance(2200 * time.Millisecond)
	ev := w.Events()
	states := channelStates(ev)
	if got, want := states[:2], []string{"CONNECTING@0s", "TRANSIENT_FAILURE@1ms"}; !slices.Equal(got, want) {
		t.Fatalf("channel states = %v, want %v first\n%s", states, want, dump(ev))
	}
	if last := states[len(states)-1]; last != "IDLE@1.3s" {
		t.Fatalf("channel states = %v, want IDLE@1.3s last: 1 s after r0's end\n%s", states, dump(ev))
	}
	if syns := kinds(ev, trace.KindSYN, ""); syns[len(syns)-1].T >= 1300*time.Millisecond {
		t.Fatalf("a SYN while IDLE\n%s", dump(ev))
	}
	if sd := kinds(ev, trace.KindSubchannelShutdown, ""); len(sd) != 1 || sd[0].T != 1300*time.Millisecond {
		t.Fatalf("subchannel-shutdown = %v, want sc1's at 1.3s", sd)
	}
	synsBefore := len(kinds(ev, trace.KindSYN, ""))
	w.SetFault(addrA, FaultNone)
	w.StartRPC("r1", RPCOptions{})
	w.Advance(1100 * time.Millisecond)
	ev = w.Events()
	if got := channelStates(ev)[len(states):]; !slices.Equal(got, []string{"CONNECTING@2.5s", "READY@2.502s", "IDLE@3.503s"}) {
		t.Fatalf("after r1: channel states %v\n%s", got, dump(ev))
	}
	if r := results(ev)["r1"]; r.Code != "OK" || r.Backend != "b0" {
		t.Fatalf("r1 = %+v, want OK from b0\n%s", r, dump(ev))
	}
	if n := len(kinds(ev, trace.KindSYN, "")); n != synsBefore+1 {
		t.Fatalf("%d SYNs after r1, want one: the new balancer's", n-synsBefore)
	}
}

// Without an idle timeout the channel never goes IDLE on its own and
// records no channel-state events (the balancer's states are the trace's).
func TestIdleTimeout_NoneRecordsNoChannelStates(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Hour)
	if got := channelStates(w.Events()); len(got) != 0 {
		t.Fatalf("channel states %v, want none", got)
	}
}
