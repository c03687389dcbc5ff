package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// TestReferenceEnvOf_OptionsOrLoudError verifies each variable of a
// scenario's environment becomes a reference option, is what the reference
// always does, or is an error naming it.
func TestReferenceEnvOf_OptionsOrLoudError(t *testing.T) {
	cases := []struct {
		env     map[string]string
		want    referenceEnv
		errPart string
	}{
		{env: nil},
		{env: map[string]string{scenario.EnvAggregateClusterBackwardCompat: "true"}, want: referenceEnv{aggregateClusterBackwardCompat: true}},
		{env: map[string]string{scenario.EnvAggregateClusterBackwardCompat: "false"}},
		{env: map[string]string{scenario.EnvXDSDualstackEndpoints: "true", scenario.EnvPickFirstLBConfig: "true"}},
		{env: map[string]string{scenario.EnvPriorityChildPolicyCache: "true"}, want: referenceEnv{priorityChildPolicyCache: true}},
		{env: map[string]string{scenario.EnvXDSDualstackEndpoints: "false"}, errPart: "client.env." + scenario.EnvXDSDualstackEndpoints + "=false"},
		{env: map[string]string{scenario.EnvPickFirstLBConfig: "false"}, errPart: "client.env." + scenario.EnvPickFirstLBConfig + "=false"},
	}
	for _, c := range cases {
		got, err := referenceEnvOf(c.env)
		switch {
		case c.errPart == "" && err != nil:
			t.Errorf("referenceEnvOf(%v): %v", c.env, err)
		case c.errPart != "" && (err == nil || !strings.Contains(err.Error(), c.errPart)):
			t.Errorf("referenceEnvOf(%v) error = %v, want one naming %s", c.env, err, c.errPart)
		case c.errPart == "" && got != c.want:
			t.Errorf("referenceEnvOf(%v) = %+v, want %+v", c.env, got, c.want)
		}
	}
}

// backwardCompat: an aggregate naming pick_first over eds1 and eds2, each
// round_robin, with env as the client's environment.
func backwardCompat(env map[string]string) *scenario.Scenario {
	res := aggregateResources(false)
	res.Clusters[0].LBPolicy = scenario.XDSPickFirst
	b := scenario.New("xds-backward-compat").
		Backend("b1", scenario.V4Only).
		Backend("b2", scenario.V4Only).
		XDS("svc.conform").
		At(0, res).
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
		tr, err := Sim(context.Background(), backwardCompat(env), Options{Seed: 1})
		if err != nil {
			t.Fatalf("switch %v: %v\n%s", on, err, dump(tr.Events))
		}
		pf, rr := leafPolicies(t, tr)
		if pf != on || rr == on {
			t.Errorf("switch %v: underlying clusters run pick_first %v, round_robin %v", on, pf, rr)
		}
	}
}

// TestReferenceEnv_ChildPolicyCacheOnEveryPriority verifies A115's revert
// switch reaches every priority config of the reference's LB config, and
// only with the switch.
func TestReferenceEnv_ChildPolicyCacheOnEveryPriority(t *testing.T) {
	cfg := `{"children":{"p0":{"config":[{"conform_priority":{"children":{},"priorities":[]}}]}},"priorities":["p0"]}`
	got, err := referenceEnv{priorityChildPolicyCache: true}.lbConfig("conform_priority", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"childPolicyCache":true,"children":{"p0":{"config":[{"conform_priority":{"childPolicyCache":true,"children":{},"priorities":[]}}]}},"priorities":["p0"]}`
	if got != want {
		t.Errorf("lbConfig = %s, want %s", got, want)
	}
	if got, _ := (referenceEnv{}).lbConfig("conform_priority", cfg); got != cfg {
		t.Errorf("without the switch lbConfig = %s, want it unchanged", got)
	}
}

// TestSim_IgnoresProcessEnvironment verifies the reference does not read
// the process's environment: the switch set there, not in the scenario,
// changes nothing.
func TestSim_IgnoresProcessEnvironment(t *testing.T) {
	t.Setenv(scenario.EnvAggregateClusterBackwardCompat, "true")
	tr, err := Sim(context.Background(), backwardCompat(nil), Options{Seed: 1})
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
	_, err := Sim(context.Background(), s, Options{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), scenario.EnvXDSDualstackEndpoints) {
		t.Errorf("Sim error = %v, want one naming %s", err, scenario.EnvXDSDualstackEndpoints)
	}
	_, err = Lab(context.Background(), s, Options{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), scenario.EnvXDSDualstackEndpoints) {
		t.Errorf("Lab error = %v, want one naming %s", err, scenario.EnvXDSDualstackEndpoints)
	}
}

// TestLab_XDSBackwardCompatFromScenarioEnv is the switch in the lab, where
// it reaches the reference's xDS resolver as an option.
func TestLab_XDSBackwardCompatFromScenarioEnv(t *testing.T) {
	requireLab(t)
	tr, err := Lab(context.Background(), backwardCompat(map[string]string{scenario.EnvAggregateClusterBackwardCompat: "true"}), Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	if pf, rr := leafPolicies(t, tr); !pf || rr {
		t.Errorf("underlying clusters run pick_first %v, round_robin %v: want the aggregate's pick_first", pf, rr)
	}
}
