package main

import (
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/reference"
)

// TestWrap_ChildPolicyCacheFromEnvironment verifies the driver gives A115's
// revert switch, read from its environment, to every priority policy of
// the service config, and leaves the config alone without it.
func TestWrap_ChildPolicyCacheFromEnvironment(t *testing.T) {
	if reference.SwitchPriorityChildPolicyCache != scenario.EnvPriorityChildPolicyCache {
		t.Fatalf("the driver reads %s, scenarios set %s", reference.SwitchPriorityChildPolicyCache, scenario.EnvPriorityChildPolicyCache)
	}
	sc := `{"loadBalancingConfig":[{"priority_experimental":{"children":{"p0":{"config":[{"pick_first":{}}]}},"priorities":["p0"],"revision":"latest"}}]}`
	for _, on := range []bool{false, true} {
		if on {
			t.Setenv(reference.SwitchPriorityChildPolicyCache, "true")
		}
		got, err := wrap(sc)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got, `"childPolicyCache":true`) != on {
			t.Errorf("switch %v: wrapped config %s", on, got)
		}
	}
}
