package reference

import (
	"strings"
	"testing"
)

// TestParseSwitches_OptionsOrLoudError verifies each variable of a
// scenario's environment becomes a reference option, is what the reference
// always does, or is an error naming it.
func TestParseSwitches_OptionsOrLoudError(t *testing.T) {
	cases := []struct {
		env     map[string]string
		want    Switches
		errPart string
	}{
		{env: nil},
		{env: map[string]string{SwitchAggregateClusterBackwardCompat: "true"}, want: Switches{AggregateClusterBackwardCompat: true}},
		{env: map[string]string{SwitchAggregateClusterBackwardCompat: "false"}},
		{env: map[string]string{SwitchXDSDualstackEndpoints: "true", SwitchPickFirstLBConfig: "true"}},
		{env: map[string]string{SwitchPriorityChildPolicyCache: "true"}, want: Switches{PriorityChildPolicyCache: true}},
		{env: map[string]string{SwitchXDSDualstackEndpoints: "false"}, errPart: "client.env." + SwitchXDSDualstackEndpoints + "=false"},
		{env: map[string]string{SwitchPickFirstLBConfig: "false"}, errPart: "client.env." + SwitchPickFirstLBConfig + "=false"},
	}
	for _, c := range cases {
		got, err := ParseSwitches(c.env)
		switch {
		case c.errPart == "" && err != nil:
			t.Errorf("ParseSwitches(%v): %v", c.env, err)
		case c.errPart != "" && (err == nil || !strings.Contains(err.Error(), c.errPart)):
			t.Errorf("ParseSwitches(%v) error = %v, want one naming %s", c.env, err, c.errPart)
		case c.errPart == "" && got != c.want:
			t.Errorf("ParseSwitches(%v) = %+v, want %+v", c.env, got, c.want)
		}
	}
}

// TestSwitches_ChildPolicyCacheOnEveryPriority verifies A115's revert
// switch reaches every priority config of the reference's LB config, and
// only with the switch.
func TestSwitches_ChildPolicyCacheOnEveryPriority(t *testing.T) {
	cfg := `{"children":{"p0":{"config":[{"conform_priority":{"children":{},"priorities":[]}}]}},"priorities":["p0"]}`
	got, err := Switches{PriorityChildPolicyCache: true}.Config("conform_priority", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"childPolicyCache":true,"children":{"p0":{"config":[{"conform_priority":{"childPolicyCache":true,"children":{},"priorities":[]}}]}},"priorities":["p0"]}`
	if got != want {
		t.Errorf("Config = %s, want %s", got, want)
	}
	if got, _ := (Switches{}).Config("conform_priority", cfg); got != cfg {
		t.Errorf("without the switch Config = %s, want it unchanged", got)
	}
}

// TestSwitches_PolicyFromServiceConfig verifies a client's service config
// maps onto the reference policy of its first loadBalancingConfig entry,
// with standard names rewritten at any depth, and pick_first without one.
func TestSwitches_PolicyFromServiceConfig(t *testing.T) {
	cases := []struct{ sc, name, config string }{
		{"", "conform_pick_first", "{}"},
		{`{"loadBalancingConfig":[]}`, "conform_pick_first", "{}"},
		{`{"loadBalancingConfig":[{"round_robin":{}}]}`, "conform_round_robin", "{}"},
		{`{"loadBalancingConfig":[{"priority_experimental":{"children":{"c":{"config":[{"pick_first":{}}]}},"priorities":["c"]}}]}`,
			"conform_priority", `{"children":{"c":{"config":[{"conform_pick_first":{}}]}},"priorities":["c"]}`},
	}
	for _, c := range cases {
		name, config, err := Switches{}.Policy(c.sc)
		if err != nil || name != c.name || config != c.config {
			t.Errorf("Policy(%s) = %s %s %v, want %s %s", c.sc, name, config, err, c.name, c.config)
		}
	}
	if _, _, err := (Switches{}).Policy(`{"loadBalancingConfig":[{"grpclb":{}}]}`); err == nil || !strings.Contains(err.Error(), "grpclb") {
		t.Errorf("Policy(grpclb) error = %v, want one naming grpclb", err)
	}
}
