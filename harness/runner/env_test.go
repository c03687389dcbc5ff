package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference"
)

// backwardCompat: an aggregate naming pick_first over eds1 and eds2, each
// round_robin, with env as the client's environment.
func backwardCompat(env map[string]string) *scenario.Scenario {
	res := aggregateResources(false)
	res.Clusters[0].LBPolicy = xds.PickFirst
	b := scenario.New("xds-backward-compat").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS("svc.conform").
		At(0, scenario.ServeXDS(res)).
		At(100*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(3*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(5 * time.Second)
	for k, v := range env {
		b.Env(k, v)
	}
	return b.MustBuild()
}

// leafPolicies reports whether tr's config-updates give the underlying
// clusters pick_first, and whether round_robin.
func leafPolicies(t *testing.T, tr *trace.Trace) (pickFirst, roundRobin bool) {
	t.Helper()
	var n int
	for _, e := range tr.Events {
		if e.Kind != trace.KindConfigUpdate {
			continue
		}
		n++
		pickFirst = pickFirst || strings.Contains(e.Detail, "pick_first")
		roundRobin = roundRobin || strings.Contains(e.Detail, "round_robin")
	}
	if n == 0 {
		t.Fatalf("no config-update:\n%s", dump(tr.Events))
	}
	return pickFirst, roundRobin
}

// TestSim_XDSBackwardCompatFromScenarioEnv verifies A75's migration switch
// reaches the reference's xDS client from the scenario's environment: the
// underlying clusters run the aggregate's pick_first with it, their own
// round_robin without it.
func TestSim_XDSBackwardCompatFromScenarioEnv(t *testing.T) {
	for _, on := range []bool{true, false} {
		env := map[string]string{}
		if on {
			env[scenario.EnvAggregateClusterBackwardCompat] = "true"
		}
		tr, err := Run(context.Background(), backwardCompat(env), Reference, trace.ModeSim, Options{Seed: 1})
		if err != nil {
			t.Fatalf("switch %v: %v\n%s", on, err, dump(tr.Events))
		}
		pf, rr := leafPolicies(t, tr)
		if pf != on || rr == on {
			t.Errorf("switch %v: underlying clusters run pick_first %v, round_robin %v", on, pf, rr)
		}
	}
}

// TestSim_IgnoresProcessEnvironment verifies the reference does not read
// the process's environment: the switch set there, not in the scenario,
// changes nothing.
func TestSim_IgnoresProcessEnvironment(t *testing.T) {
	t.Setenv(scenario.EnvAggregateClusterBackwardCompat, "true")
	tr, err := Run(context.Background(), backwardCompat(nil), Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	if pf, rr := leafPolicies(t, tr); pf || !rr {
		t.Errorf("with the switch in the process's environment only, pick_first %v, round_robin %v: want the clusters' own round_robin", pf, rr)
	}
}

// TestRuns_RefuseEnvTheReferenceCannotHonour verifies a run fails, naming
// the variable, rather than ignoring a switch the reference has no option
// for.
func TestRuns_RefuseEnvTheReferenceCannotHonour(t *testing.T) {
	s := backwardCompat(map[string]string{scenario.EnvXDSDualstackEndpoints: "false"})
	_, err := Run(context.Background(), s, Reference, trace.ModeSim, Options{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), scenario.EnvXDSDualstackEndpoints) {
		t.Errorf("Sim error = %v, want one naming %s", err, scenario.EnvXDSDualstackEndpoints)
	}
	_, err = Run(context.Background(), s, Reference, trace.ModeLab, Options{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), scenario.EnvXDSDualstackEndpoints) {
		t.Errorf("Lab error = %v, want one naming %s", err, scenario.EnvXDSDualstackEndpoints)
	}
}

// TestLab_XDSBackwardCompatFromScenarioEnv is the switch in the lab, where
// it reaches the reference's xDS resolver as an option.
func TestLab_XDSBackwardCompatFromScenarioEnv(t *testing.T) {
	requireLab(t)
	tr, err := Run(context.Background(), backwardCompat(map[string]string{scenario.EnvAggregateClusterBackwardCompat: "true"}), Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	if pf, rr := leafPolicies(t, tr); !pf || rr {
		t.Errorf("underlying clusters run pick_first %v, round_robin %v: want the aggregate's pick_first", pf, rr)
	}
}

// TestSwitches_ReferenceKnowsTheScenariosNames verifies the reference's
// switch names are the ones scenarios set: every variable a scenario may
// set is one the reference either takes as an option or names as always on.
func TestSwitches_ReferenceKnowsTheScenariosNames(t *testing.T) {
	known := []string{reference.SwitchAggregateClusterBackwardCompat, reference.SwitchXDSDualstackEndpoints,
		reference.SwitchPickFirstLBConfig, reference.SwitchPriorityChildPolicyCache, reference.SwitchRingHashRequestHashKey}
	for _, name := range scenario.EnvVars() {
		if !slices.Contains(known, name) {
			t.Errorf("scenarios may set %s, which the reference does not know", name)
		}
		if _, err := reference.ParseSwitches(map[string]string{name: "true"}); err != nil {
			t.Errorf("%s=true: %v", name, err)
		}
	}
}
