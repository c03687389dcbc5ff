package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// failRPCs: round_robin over b1 and b2; b1 answers every RPC with
// RESOURCE_EXHAUSTED from 0 (fail_rpcs), r1 and r2 reach one backend each.
// b1 is stopped once they have their results and started again 50 ms
// later: the fault outlives it, and r3 and r4, once b1 is READY again
// (after the subchannel's backoff), fail on b1 again. Once they have their
// results the fault is cleared and r5 and r6 are answered by both.
//
// Each pair judges the spread over both backends, so it waits for both
// subchannels READY (round_robin picks only READY ones): r1 and r2 went at
// 50 and 60 ms, before b2's handshake on a loaded machine; the clear came
// at 2 s, before b1's reconnection after its backoff could finish. The
// 10 and 20 ms after a READY are for the policy to hand its new picker to
// the channel: the recorder records the subchannel's state before that.
func failRPCs() *scenario.Scenario {
	bothReady := scenario.On("subchannel-state").WithState("READY").Times(2)
	backAgain := scenario.On("subchannel-state").WithState("READY").WithAddr("b1/ipv4").Times(2)
	b := scenario.New("fail-rpcs").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("round_robin", `{}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
		At(0, scenario.FailWith("b1/ipv4", "RESOURCE_EXHAUSTED")).
		AfterDelay(bothReady, 10*time.Millisecond, scenario.RPC("r1")).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.RPC("r2")).
		After(scenario.On("rpc-result").WithRPC("r2"), scenario.Stop("b1")).
		AfterDelay(scenario.On("rpc-result").WithRPC("r2"), 50*time.Millisecond, scenario.Start("b1")).
		AfterDelay(backAgain, 10*time.Millisecond, scenario.RPC("r3")).
		AfterDelay(backAgain, 20*time.Millisecond, scenario.RPC("r4")).
		After(scenario.On("rpc-result").Times(4), scenario.Clear("b1/ipv4")).
		After(scenario.On("rpc-result").Times(4), scenario.RPC("r5")). // after the clear: steps met together apply in order
		After(scenario.On("rpc-result").WithRPC("r5"), scenario.RPC("r6"))
	return b.After(scenario.On("rpc-result").WithRPC("r6"), scenario.Finish()).End(10 * time.Second).MustBuild()
}

// checkFailRPCs verifies a run of failRPCs in either mode: of each pair,
// one RPC fails with the fault's code and message and one is answered by
// b2 (b1 and b2 take turns, from either), until the fault is cleared; and
// the fault-set event names the fault and its code.
func checkFailRPCs(t *testing.T, tr *trace.Trace) {
	t.Helper()
	res := map[string]trace.Event{}
	for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindRPCResult)) {
		res[e.RPC] = e
	}
	msg := "fault fail_rpcs on " + AddrOf("b1", 0, scenario.IPv4)
	for _, pair := range [][2]string{{"r1", "r2"}, {"r3", "r4"}} {
		failed, served := 0, 0
		for _, id := range pair {
			switch r := res[id]; {
			case r.Code == "RESOURCE_EXHAUSTED" && r.Err == msg:
				failed++
			case r.Code == "OK" && r.Backend == "b2":
				served++
			}
		}
		if failed != 1 || served != 1 {
			t.Errorf("%v: %d failed by b1's fault, %d answered by b2; want one each\n%s", pair, failed, served, dump(tr.Events))
		}
	}
	got := map[string]bool{res["r5"].Backend: true, res["r6"].Backend: true}
	if res["r5"].Code != "OK" || res["r6"].Code != "OK" || !got["b1"] || !got["b2"] {
		t.Errorf("after the clear, r5 %+v, r6 %+v: want both answered, by b1 and b2", res["r5"], res["r6"])
	}
	set := trace.Select(tr.Events, trace.OfKind(trace.KindFaultSet), func(e trace.Event) bool { return e.Fault == string(scenario.FailRPCs) })
	if len(set) < 1 || set[0].Code != "RESOURCE_EXHAUSTED" {
		t.Errorf("fault-set events %v, want fail_rpcs with RESOURCE_EXHAUSTED", set)
	}
}

// TestSim_FailRPCsFault verifies the simulator carries out fail_rpcs: RPCs
// on the address fail with its code, through a backend's restart, until
// cleared.
func TestSim_FailRPCsFault(t *testing.T) {
	tr, err := Run(context.Background(), failRPCs(), Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkFailRPCs(t, tr)
}

// TestLab_FailRPCsFault verifies the lab does what the simulator does with
// fail_rpcs, the backend recording each RPC it fails with the code.
func TestLab_FailRPCsFault(t *testing.T) {
	requireLab(t)
	tr, err := Run(context.Background(), failRPCs(), Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkFailRPCs(t, tr)
	failed := trace.Select(tr.Events, trace.OfKind(trace.KindRPCServed), func(e trace.Event) bool {
		return e.Backend == "b1" && e.Code == "RESOURCE_EXHAUSTED"
	})
	if len(failed) != 2 {
		t.Errorf("%d rpc-served events of b1 with the fault's code, want 2\n%s", len(failed), dump(tr.Events))
	}
	var named []string
	for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindRPCServed)) {
		named = append(named, e.RPC)
	}
	if want := []string{"r1", "r2", "r3", "r4", "r5", "r6"}; !slices.Equal(slices.Sorted(slices.Values(named)), want) {
		t.Errorf("the rpc-served events name RPCs %v, want each of %v once (x-conform-rpc)", named, want)
	}
}
