package runner

import (
	"fmt"
	"maps"
	"slices"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/reference/priority"
)

// referenceEnv is what the reference takes of a scenario's gRPC
// environment (scenario.Client.Env), as options. The reference never reads
// the process environment: runs share the process, in parallel.
type referenceEnv struct {
	// aggregateClusterBackwardCompat is A75's migration switch
	// (scenario.EnvAggregateClusterBackwardCompat), for the xDS client.
	aggregateClusterBackwardCompat bool
	// priorityChildPolicyCache is A115's revert switch
	// (scenario.EnvPriorityChildPolicyCache), for every priority policy
	// of the LB config (lbConfig).
	priorityChildPolicyCache bool
}

// lbConfig is config, the reference policy name's JSON config, with the
// options env gives the policies in it: A115's revert switch on every
// priority policy (priority.WithChildPolicyCache).
func (re referenceEnv) lbConfig(name, config string) (string, error) {
	if !re.priorityChildPolicyCache {
		return config, nil
	}
	return priority.WithChildPolicyCacheIn(name, config)
}

// referenceAlwaysOn are the switches the reference has no option for: the
// features they guard are always on in the reference, so "true" is
// honoured as it is and "false" cannot be.
var referenceAlwaysOn = map[string]string{
	// reference/xds/client always reads additional_addresses (A61, xDS
	// Changes).
	scenario.EnvXDSDualstackEndpoints: "the reference's xDS client always reads additional_addresses",
	// reference/pickfirst always takes shuffleAddressList, and the xDS
	// client always accepts pick_first as a cluster's policy (A62).
	scenario.EnvPickFirstLBConfig: "the reference always takes shuffleAddressList and pick_first through xDS",
}

// CheckReferenceEnv reports the first variable of env the reference cannot
// honour, for runs of the reference through its driver, which reads the
// switches it honours from its process's environment.
func CheckReferenceEnv(env map[string]string) error {
	_, err := referenceEnvOf(env)
	return err
}

// referenceEnvOf is env as the reference's options. A variable the
// reference cannot honour is an error naming it: a scenario is never run
// with part of its environment silently dropped.
func referenceEnvOf(env map[string]string) (referenceEnv, error) {
	var re referenceEnv
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		switch k {
		case scenario.EnvAggregateClusterBackwardCompat:
			re.aggregateClusterBackwardCompat = v == "true"
		case scenario.EnvPriorityChildPolicyCache:
			re.priorityChildPolicyCache = v == "true"
		default:
			why, on := referenceAlwaysOn[k]
			if on && v == "true" {
				continue
			}
			if !on {
				why = "the reference has no option for it"
			}
			return re, fmt.Errorf("client.env.%s=%s: the reference cannot honour it (%s)", k, v, why)
		}
	}
	return re, nil
}
