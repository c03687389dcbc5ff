package weightedtarget

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/balancer"
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

// parseChild picks the first registered policy of a LoadBalancingConfig list
// and parses its config with that policy's parser.
func parseChild(list []map[string]json.RawMessage) (*target, error) {
	t := &target{}
	var names []string
	for _, entry := range list {
		if len(entry) != 1 {
			return nil, fmt.Errorf("child_policy entry has %d policies, want 1", len(entry))
		}
		for name, raw := range entry {
			names = append(names, name)
			if t.policy != "" {
				continue
			}
			b := balancer.Get(name)
			if b == nil {
				continue
			}
			t.policy = name
			if p, ok := b.(balancer.ConfigParser); ok {
				if len(raw) == 0 || string(raw) == "null" {
					raw = json.RawMessage("{}")
				}
				c, err := p.ParseConfig(raw)
				if err != nil {
					return nil, fmt.Errorf("policy %q: %v", name, err)
				}
				t.config = c
			}
		}
	}
	if t.policy == "" {
		return nil, fmt.Errorf("no registered policy among %v", names)
	}
	return t, nil
}
