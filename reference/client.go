package reference

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/conformlab/conform/reference/priority"
)

// The gRPC environment switches the reference knows, as the documents name
// them. The reference never reads the process environment (runs share a
// process, in parallel): whoever runs it maps a client's switches onto it
// with ParseSwitches.
const (
	// SwitchAggregateClusterBackwardCompat is A75's migration switch (A75,
	// Aggregate Cluster Changes).
	SwitchAggregateClusterBackwardCompat = "GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT"
	// SwitchXDSDualstackEndpoints guards reading EDS's additional_addresses
	// (A61, Temporary environment variable protection).
	SwitchXDSDualstackEndpoints = "GRPC_EXPERIMENTAL_XDS_DUALSTACK_ENDPOINTS"
	// SwitchPickFirstLBConfig guards pick_first's shuffleAddressList and
	// pick_first through xDS (A62, Temporary environment variable
	// protection).
	SwitchPickFirstLBConfig = "GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG"
	// SwitchPriorityChildPolicyCache reverts A115's change to A56 (A115,
	// Temporary environment variable protection).
	SwitchPriorityChildPolicyCache = "GRPC_EXPERIMENTAL_ENABLE_PRIORITY_LB_CHILD_POLICY_CACHE"
	// SwitchRingHashRequestHashKey guards ring_hash's requestHashHeader
	// (A76, Temporary environment variable protection).
	SwitchRingHashRequestHashKey = "GRPC_EXPERIMENTAL_RING_HASH_SET_REQUEST_HASH_KEY"
)

// Switches is what the reference takes of a client's gRPC environment
// switches, as options.
type Switches struct {
	// AggregateClusterBackwardCompat is for the xDS client
	// (reference/xds/resolver.Options).
	AggregateClusterBackwardCompat bool
	// PriorityChildPolicyCache is given to every priority policy of an LB
	// config (Config).
	PriorityChildPolicyCache bool
}

// alwaysOn are the switches the reference has no option for: the features
// they guard are always on in the reference, so "true" is honoured as it is
// and "false" cannot be.
var alwaysOn = map[string]string{
	// reference/xds/client always reads additional_addresses (A61, xDS
	// Changes).
	SwitchXDSDualstackEndpoints: "the reference's xDS client always reads additional_addresses",
	// reference/pickfirst always takes shuffleAddressList, and the xDS
	// client always accepts pick_first as a cluster's policy (A62).
	SwitchPickFirstLBConfig: "the reference always takes shuffleAddressList and pick_first through xDS",
	// reference/ringhash always takes requestHashHeader (A76).
	SwitchRingHashRequestHashKey: "the reference's ring_hash always takes requestHashHeader",
}

// ParseSwitches maps a client's environment switches (name → "true" or
// "false") onto the reference. A switch the reference cannot honour is an
// error naming it: a client is never run with part of its environment
// silently dropped.
func ParseSwitches(env map[string]string) (Switches, error) {
	var sw Switches
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		switch k {
		case SwitchAggregateClusterBackwardCompat:
			sw.AggregateClusterBackwardCompat = v == "true"
		case SwitchPriorityChildPolicyCache:
			sw.PriorityChildPolicyCache = v == "true"
		default:
			why, on := alwaysOn[k]
			if on && v == "true" {
				continue
			}
			if !on {
				why = "the reference has no option for it"
			}
			return sw, fmt.Errorf("client.env.%s=%s: the reference cannot honour it (%s)", k, v, why)
		}
	}
	return sw, nil
}

// Policy maps a client's service config (JSON in standard policy names; ""
// for none) onto the reference: the reference policy for the first entry of
// its loadBalancingConfig (pick_first when there is none) and that policy's
// config, in reference names, with sw applied (Config).
func (sw Switches) Policy(serviceConfig string) (name, config string, err error) {
	std, cfg, err := FirstLBConfig(serviceConfig)
	if err != nil {
		return "", "", err
	}
	name, ok := Name(std)
	if !ok {
		return "", "", fmt.Errorf("the reference has no policy %q", std)
	}
	if config, err = RewriteConfig(cfg); err != nil {
		return "", "", err
	}
	config, err = sw.Config(name, config)
	return name, config, err
}

// Config is config, the JSON config of the reference policy name, with the
// options sw gives the policies in it: A115's revert switch on every
// priority policy.
func (sw Switches) Config(name, config string) (string, error) {
	if !sw.PriorityChildPolicyCache {
		return config, nil
	}
	return priority.WithChildPolicyCacheIn(name, config)
}

// FirstLBConfig is the first policy of a service config's
// loadBalancingConfig list, or pick_first with {} when there is none.
func FirstLBConfig(serviceConfig string) (name, config string, err error) {
	var sc struct {
		LoadBalancingConfig []map[string]json.RawMessage `json:"loadBalancingConfig"`
	}
	if serviceConfig != "" {
		if err := json.Unmarshal([]byte(serviceConfig), &sc); err != nil {
			return "", "", fmt.Errorf("service config: %w", err)
		}
	}
	if len(sc.LoadBalancingConfig) == 0 {
		return "pick_first", "{}", nil
	}
	for k, v := range sc.LoadBalancingConfig[0] {
		return k, string(v), nil
	}
	return "", "", fmt.Errorf("service config: loadBalancingConfig[0] is empty")
}
