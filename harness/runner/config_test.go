package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// twoPriorities is a priority config over pick_first children, highest
// first, with A115's removal of dropped children ("latest").
func twoPriorities(names ...string) string {
	var kids, prios []string
	for _, n := range names {
		kids = append(kids, `"`+n+`":{"config":[{"pick_first":{}}]}`)
		prios = append(prios, `"`+n+`"`)
	}
	return `{"revision":"latest","children":{` + strings.Join(kids, ",") + `},"priorities":[` + strings.Join(prios, ",") + `]}`
}

// configChange: p0 (b1) serves r1; at 200 ms a config step drops p0, so r2,
// sent once p0's subchannel is shut down, goes to p1 (b2); at 400 ms a resolver update repeats the addresses, and r3
// must still go to p1: the new config outlives resolver updates.
func configChange() *scenario.Scenario {
	eps := scenario.Resolve(scenario.EP("b1/ipv4").With("path", "p0"), scenario.EP("b2/ipv4").With("path", "p1"))
	return scenario.New("config-change").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("priority_experimental", twoPriorities("p0", "p1")).
		At(0, eps).
		At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		At(200*time.Millisecond, scenario.Config("priority_experimental", twoPriorities("p1"))).
		// r2 goes once p0 is gone (its subchannel shut down): in the lab the
		// config reaches the policy through the resolver, after the step,
		// and an r2 sent 1 ms after it could still be picked by p0.
		After(scenario.On("subchannel-shutdown"), scenario.RPC("r2", scenario.WaitForReady())).
		At(400*time.Millisecond, eps).
		At(450*time.Millisecond, scenario.RPC("r3", scenario.WaitForReady())).
		After(scenario.On("rpc-result").WithRPC("r3"), scenario.Finish()).
		End(5 * time.Second).
		MustBuild()
}

// checkConfigChange verifies a run of configChange in either mode.
func checkConfigChange(t *testing.T, tr *trace.Trace) {
	t.Helper()
	want := map[string]string{"r1": "b1", "r2": "b2", "r3": "b2"}
	for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindRPCResult)) {
		if e.Backend != want[e.RPC] {
			t.Errorf("%s answered by %q (%s), want %s\n%s", e.RPC, e.Backend, e.Code, want[e.RPC], dump(tr.Events))
		}
		delete(want, e.RPC)
	}
	if len(want) > 0 {
		t.Errorf("RPCs without a result: %v\n%s", want, dump(tr.Events))
	}
	cu := trace.Select(tr.Events, trace.OfKind(trace.KindConfigUpdate))
	if len(cu) != 1 || cu[0].Source != trace.SourceHarness || !strings.Contains(cu[0].Detail, `"priorities":["p1"]`) {
		t.Fatalf("config-update events %v, want one from the harness with the new config\n%s", cu, dump(tr.Events))
	}
	// The step is due at 200 ms; a loaded machine may run it later, never
	// sooner.
	if cu[0].T < 200*time.Millisecond {
		t.Errorf("config-update at %v, before its step's time, 200ms", cu[0].T)
	}
	ups := trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate))
	if n := len(ups); n != 2 {
		t.Fatalf("%d resolver-update events, want 2 (a config update is not one)", n)
	}
	// A115: p0, dropped from the config, is removed at once: its one
	// subchannel is shut down after the config update and before r2, sent
	// after it to p1, which connects only then, has its answer. (The lab's
	// channel shuts the rest down when the run ends, after r3.) Judged by
	// those events, not by a time after the step, which a loaded machine
	// stretches.
	r2 := trace.Select(tr.Events, trace.OfKind(trace.KindRPCResult), func(e trace.Event) bool { return e.RPC == "r2" })
	if len(r2) != 1 {
		t.Fatalf("r2's results %v, want one", r2)
	}
	shut := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelShutdown), func(e trace.Event) bool { return e.T < ups[1].T })
	if len(shut) != 1 || shut[0].T < cu[0].T || shut[0].T > r2[0].T {
		t.Errorf("subchannel shutdowns before the second resolver update %v, want p0's one after the config update (%v) and before r2's answer (%v)", shut, cu[0].T, r2[0].T)
	}
}

// TestSim_ConfigStep verifies a config step reaches the simulated policy at
// its time, is recorded, and stays in force for later resolver updates.
func TestSim_ConfigStep(t *testing.T) {
	tr, err := Run(context.Background(), configChange(), Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkConfigChange(t, tr)
}

// TestLab_ConfigStep verifies the same in the lab, where the new config
// reaches the channel as a service config from the resolver.
func TestLab_ConfigStep(t *testing.T) {
	requireLab(t)
	tr, err := Run(context.Background(), configChange(), Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkConfigChange(t, tr)
}

// TestSim_ConfigStepChangesPolicyGracefully verifies a config step naming
// another policy switches to it as L9 (Swapping out balancer) says: the
// channel stays READY through the switch, and the new policy (round_robin)
// then spreads RPCs that pick_first sent to one backend.
func TestSim_ConfigStepChangesPolicyGracefully(t *testing.T) {
	b := scenario.New("policy-change").Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("pick_first", `{}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
		At(100*time.Millisecond, scenario.RPC("r0")).
		At(200*time.Millisecond, scenario.Config("round_robin", `{}`))
	for i := range 4 {
		b.At(300*time.Millisecond+time.Duration(i)*10*time.Millisecond, scenario.RPC(fmt.Sprintf("r%d", i+1)))
	}
	tr, err := Run(context.Background(), b.End(time.Second).MustBuild(), Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	for _, e := range tr.Events {
		if e.Kind != trace.KindBalancerState || e.Policy != "" {
			continue
		}
		if ready && e.State != "READY" {
			t.Fatalf("the channel left READY (%s at %v) during the switch:\n%s", e.State, e.T, dump(tr.Events))
		}
		ready = ready || e.State == "READY"
	}
	served := map[string]bool{}
	for _, e := range tr.Events {
		if e.Kind == trace.KindRPCResult && e.RPC != "r0" {
			if e.Code != "OK" {
				t.Fatalf("RPC %s failed: %s %s", e.RPC, e.Code, e.Err)
			}
			served[e.Backend] = true
		}
	}
	if !served["b1"] || !served["b2"] {
		t.Fatalf("after the switch RPCs were served by %v, want both backends (round_robin)", served)
	}
}
