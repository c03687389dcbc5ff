package weightedtarget

import (
	"encoding/json"
	"fmt"

	"github.com/conformlab/conform/reference/internal/childconfig"
	"google.golang.org/grpc/serviceconfig"
)

// lbConfig is A28's WeightedTargetConfig, parsed.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig

	targets map[string]*target
}

// target is A28's Target: a weight and the first registered policy of its
// child_policy list, with that policy's parsed config.
type target struct {
	weight uint32
	policy string
	config serviceconfig.LoadBalancingConfig
}

type jsonTarget struct {
	Weight *uint32 `json:"weight"`
	// The proto field is child_policy; proto3 JSON also accepts the
	// lowerCamelCase form, which grpc-go emits.
	ChildSnake []map[string]json.RawMessage `json:"child_policy"`
	ChildCamel []map[string]json.RawMessage `json:"childPolicy"`
}

type jsonConfig struct {
	Targets map[string]jsonTarget `json:"targets"`
}

func parseConfig(js json.RawMessage) (*lbConfig, error) {
	var jc jsonConfig
	if err := json.Unmarshal(js, &jc); err != nil {
		return nil, fmt.Errorf("%s: config: %v", Name, err)
	}
	cfg := &lbConfig{targets: make(map[string]*target)}
	for name, jt := range jc.Targets {
		// A weight of zero would make a target that is never picked; we
		// take it as a mistake in the config rather than guess.
		if jt.Weight == nil || *jt.Weight == 0 {
			return nil, fmt.Errorf("%s: config: targets[%q]: weight must be positive", Name, name)
		}
		list := jt.ChildSnake
		if list == nil {
			list = jt.ChildCamel
		}
		t, err := parseChild(list)
		if err != nil {
			return nil, fmt.Errorf("%s: config: targets[%q]: %v", Name, name, err)
		}
		t.weight = *jt.Weight
		cfg.targets[name] = t
	}
	return cfg, nil
}

// parseChild reads a target's child_policy list (childconfig.Parse).
func parseChild(list []map[string]json.RawMessage) (*target, error) {
	policy, config, err := childconfig.Parse("child_policy", list)
	if err != nil {
		return nil, err
	}
	return &target{policy: policy, config: config}, nil
}
