package sim

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/conformlab/conform/harness/trace"
)

// results maps RPC id to its rpc-result event.
func results(ev []trace.Event) map[string]trace.Event {
	out := map[string]trace.Event{}
	for _, e := range kinds(ev, trace.KindRPCResult, "") {
		out[e.RPC] = e
	}
	return out
}

// TestPick_QueuesOnNoSubConnAvailableUntilNextPicker verifies that an RPC
// picked while the policy answers ErrNoSubConnAvailable waits, and succeeds
// with the picker that follows READY.
func TestPick_QueuesOnNoSubConnAvailableUntilNextPicker(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.StartRPC("r1", RPCOptions{})
	if got := results(w.Events()); len(got) != 0 {
		t.Fatalf("RPC finished before any connection: %v", got)
	}
	w.Advance(time.Second)
	ev := w.Events()
	picks := kinds(ev, trace.KindPick, "")
	if len(picks) != 2 || picks[0].Detail != "queued" || picks[1].Subchannel != "sc1" || picks[1].T != 2*time.Millisecond {
		t.Fatalf("picks = %v, want queued, then sc1 at 2ms\n%s", picks, dump(ev))
	}
	if r := results(ev)["r1"]; r.Code != "OK" || r.Backend != "b0" || r.T != 3*time.Millisecond {
		t.Fatalf("r1 = %+v, want OK from b0 at 3ms", r)
	}
}

// TestPick_PickerErrorFailsFastUnlessWaitForReady verifies that a picker
// error fails a plain RPC with UNAVAILABLE at once while a wait-for-ready RPC
// waits and succeeds once a connection is READY.
func TestPick_PickerErrorFailsFastUnlessWaitForReady(t *testing.T) {
	w := newChannel(t, `{"failPicks":true,"reconnect":true}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultReset)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(10 * time.Millisecond)
	w.StartRPC("fast", RPCOptions{})
	w.StartRPC("wfr", RPCOptions{WaitForReady: true})
	got := results(w.Events())
	if r := got["fast"]; r.Code != "UNAVAILABLE" || r.Err != errNoReady.Error() || r.T != 10*time.Millisecond {
		t.Fatalf("fast = %+v, want UNAVAILABLE %q at 10ms", r, errNoReady)
	}
	if _, done := got["wfr"]; done {
		t.Fatalf("wait-for-ready RPC finished while no subchannel was READY: %+v", got["wfr"])
	}
	w.SetFault(addrA, FaultNone)
	w.Advance(10 * time.Second)
	if r := results(w.Events())["wfr"]; r.Code != "OK" || r.Backend != "b0" {
		t.Fatalf("wfr = %+v, want OK from b0\n%s", r, dump(w.Events()))
	}
}

// TestPick_StatusErrorEndsEvenWaitForReady verifies that a picker's status
// error ends a wait-for-ready RPC with that status.
func TestPick_StatusErrorEndsEvenWaitForReady(t *testing.T) {
	w := newChannel(t, `{"dropPicks":true}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultReset)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(10 * time.Millisecond)
	w.StartRPC("wfr", RPCOptions{WaitForReady: true})
	if r := results(w.Events())["wfr"]; r.Code != "UNAVAILABLE" || r.Err != "test lb: dropped" {
		t.Fatalf("wfr = %+v, want the picker's UNAVAILABLE status", r)
	}
}

// TestPick_DeadlineExceededWhileQueued verifies that a queued RPC with a
// deadline ends with DEADLINE_EXCEEDED exactly at its deadline, naming the
// latest picker error.
func TestPick_DeadlineExceededWhileQueued(t *testing.T) {
	w := newChannel(t, `{"failPicks":true}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultReset)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Second)
	w.StartRPC("r", RPCOptions{WaitForReady: true, Deadline: 5 * time.Second})
	w.Advance(time.Minute)
	r := results(w.Events())["r"]
	if r.Code != "DEADLINE_EXCEEDED" || r.T != 6*time.Second || r.Err != "latest balancer error: "+errNoReady.Error() {
		t.Fatalf("r = %+v, want DEADLINE_EXCEEDED at 6s with the latest balancer error", r)
	}
}

// TestPick_NotReadySubConnWaitsForNextPicker verifies that a picked SubConn
// that is not READY makes the RPC wait for the next picker (calling Done),
// and that the RPC is carried once the SubConn is READY.
func TestPick_NotReadySubConnWaitsForNextPicker(t *testing.T) {
	w := newChannel(t, `{"pickAny":true}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.StartRPC("r", RPCOptions{})
	w.Advance(time.Second)
	ev := w.Events()
	picks := kinds(ev, trace.KindPick, "")
	if len(picks) == 0 || picks[0].Detail != "not ready" {
		t.Fatalf("picks = %v, want a not-ready pick first", picks)
	}
	if last := picks[len(picks)-1]; last.Addr != addrA {
		t.Fatalf("last pick = %+v, want one carried on %s", last, addrA)
	}
	if r := results(ev)["r"]; r.Code != "OK" {
		t.Fatalf("r = %+v, want OK", r)
	}
	// One Done per not-ready pick, one for the completed RPC.
	if lb := w.bal.Current().(*testLB); lb.done != len(picks) {
		t.Fatalf("Done called %d times, want %d", lb.done, len(picks))
	}
}

// TestRPC_FailRPCsAnswersWithCodeOverTheSameConnection verifies the
// fail_rpcs fault: an RPC picked on the address fails one RTT later with
// the fault's code and the lab's message, its Done sees the failure, the
// connection stays up (no new attempt), another address answers as
// before, and clearing the fault restores the answers.
func TestRPC_FailRPCsAnswersWithCodeOverTheSameConnection(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(10 * time.Millisecond)
	w.FailRPCs(addrA, codes.ResourceExhausted)
	w.StartRPC("r1", RPCOptions{})
	w.Advance(10 * time.Millisecond)
	w.SetFault(addrA, FaultNone)
	w.StartRPC("r2", RPCOptions{})
	w.Advance(10 * time.Millisecond)
	ev := w.Events()
	got := results(ev)
	if r := got["r1"]; r.Code != "RESOURCE_EXHAUSTED" || r.Err != "fault fail_rpcs on "+addrA || r.Backend != "" || r.T != 11*time.Millisecond {
		t.Errorf("r1 = %+v, want RESOURCE_EXHAUSTED %q at 11ms", r, "fault fail_rpcs on "+addrA)
	}
	if r := got["r2"]; r.Code != "OK" || r.Backend != "b0" {
		t.Errorf("r2 = %+v, want OK from b0", r)
	}
	if lb := w.bal.Current().(*testLB); lb.done != 2 || lb.failed != 1 {
		t.Errorf("Done: %d calls, %d with an error; want 2, 1", lb.done, lb.failed)
	}
	if syns := kinds(ev, trace.KindSYN, ""); len(syns) != 1 {
		t.Errorf("%d SYNs, want 1: fail_rpcs leaves the connection alone\n%s", len(syns), dump(ev))
	}
	set := kinds(ev, trace.KindFaultSet, "")
	if len(set) != 1 || set[0].Fault != "fail_rpcs" || set[0].Code != "RESOURCE_EXHAUSTED" {
		t.Errorf("fault-set events %+v, want one fail_rpcs with RESOURCE_EXHAUSTED", set)
	}
}
