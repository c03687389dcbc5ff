package priority

import (
	"encoding/json"
	"fmt"

	"github.com/conformlab/conform/reference/internal/childconfig"
	"google.golang.org/grpc/serviceconfig"
)

// revision selects which text of A56 the policy follows where the texts
// differ. It is conform's extension to the A56 config: both revisions are
// legitimate targets (spec/README.md), and a check names the one it is from.
type revision string

const (
	// revisionSeed is A56 as first written (last updated 2022-08-23), with
	// the child policy cache on config removal.
	revisionSeed revision = "seed"
	// revisionLatest is A56 as updated by A115 (last updated 2025-08-18): the
	// failover timer re-runs the choice, starts only on a transition into
	// CONNECTING, and a child removed from the config is removed at once.
	revisionLatest revision = "latest"
)

// lbConfig is A56's PriorityLoadBalancingPolicyConfig, parsed.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig

	children   map[string]*childConfig
	priorities []string
	revision   revision
	// childPolicyCache is A115's revert switch
	// (GRPC_EXPERIMENTAL_ENABLE_PRIORITY_LB_CHILD_POLICY_CACHE): with the
	// latest revision, a child removed from the config is kept for 15
	// minutes, as the seed keeps it. conform's extension, like revision;
	// the seed always keeps removed children.
	childPolicyCache bool
}

// childConfig is A56's Child: the first registered policy of its config
// list, with that policy's parsed config.
type childConfig struct {
	policy             string
	config             serviceconfig.LoadBalancingConfig
	ignoreReresolution bool
}

type jsonChild struct {
	Config []map[string]json.RawMessage `json:"config"`
	// The proto field is ignore_reresolution_requests; proto3 JSON also
	// accepts the lowerCamelCase form, which grpc-go emits.
	IgnoreSnake *bool `json:"ignore_reresolution_requests"`
	IgnoreCamel *bool `json:"ignoreReresolutionRequests"`
}

type jsonConfig struct {
	Children   map[string]jsonChild `json:"children"`
	Priorities []string             `json:"priorities"`
	Revision   string               `json:"revision"`
	// ChildPolicyCache is childPolicyCache; WithChildPolicyCache sets it.
	ChildPolicyCache bool `json:"childPolicyCache"`
}

func parseConfig(js json.RawMessage) (*lbConfig, error) {
	var jc jsonConfig
	if err := json.Unmarshal(js, &jc); err != nil {
		return nil, fmt.Errorf("%s: config: %v", Name, err)
	}
	cfg := &lbConfig{children: make(map[string]*childConfig), priorities: jc.Priorities, childPolicyCache: jc.ChildPolicyCache}
	switch jc.Revision {
	case "", string(revisionSeed):
		cfg.revision = revisionSeed
	case string(revisionLatest):
		cfg.revision = revisionLatest
	default:
		return nil, fmt.Errorf("%s: config: revision %q is neither %q nor %q", Name, jc.Revision, revisionSeed, revisionLatest)
	}
	for name, jch := range jc.Children {
		cc, err := parseChild(jch)
		if err != nil {
			return nil, fmt.Errorf("%s: config: children[%q]: %v", Name, name, err)
		}
		cfg.children[name] = cc
	}
	// Names tie priorities to children (A56, LB Policy Configuration): every
	// priority names a child, once, and every child has a priority.
	seen := make(map[string]bool)
	for i, name := range jc.Priorities {
		if _, ok := cfg.children[name]; !ok {
			return nil, fmt.Errorf("%s: config: priorities[%d] %q is not in children", Name, i, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: config: priorities[%d] %q is listed twice", Name, i, name)
		}
		seen[name] = true
	}
	for name := range cfg.children {
		if !seen[name] {
			return nil, fmt.Errorf("%s: config: children[%q] is not in priorities", Name, name)
		}
	}
	return cfg, nil
}

// parseChild reads A56's Child: its ignore_reresolution_requests and the
// first registered policy of its config list (childconfig.Parse).
func parseChild(jch jsonChild) (*childConfig, error) {
	cc := &childConfig{}
	switch {
	case jch.IgnoreSnake != nil:
		cc.ignoreReresolution = *jch.IgnoreSnake
	case jch.IgnoreCamel != nil:
		cc.ignoreReresolution = *jch.IgnoreCamel
	}
	var err error
	cc.policy, cc.config, err = childconfig.Parse("config", jch.Config)
	if err != nil {
		return nil, err
	}
	return cc, nil
}
