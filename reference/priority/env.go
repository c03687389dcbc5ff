package priority

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// WithChildPolicyCache returns lbConfig (one LoadBalancingConfig object,
// {"name": config}, or a list of them) with "childPolicyCache": true in the
// config of every priority policy (Name) in it, at any depth. It is how a
// harness or a driver that honours
// GRPC_EXPERIMENTAL_ENABLE_PRIORITY_LB_CHILD_POLICY_CACHE (A115, Temporary
// environment variable protection) gives the switch to the policy, which
// never reads the environment.
func WithChildPolicyCache(lbConfig json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(lbConfig))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: child policy cache: %v", Name, err)
	}
	setChildPolicyCache(v)
	return json.Marshal(v)
}

// WithChildPolicyCacheIn is WithChildPolicyCache for the config of one
// policy given by name (the policy itself a priority policy or not): the
// config, as text, with the option set in every priority policy of it.
func WithChildPolicyCacheIn(name, config string) (string, error) {
	key, err := json.Marshal(name)
	if err != nil {
		return "", err
	}
	out, err := WithChildPolicyCache(json.RawMessage("{" + string(key) + ":" + config + "}"))
	if err != nil {
		return "", err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	return string(m[name]), nil
}

func setChildPolicyCache(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if cfg, ok := c.(map[string]any); ok && k == Name {
				cfg["childPolicyCache"] = true
			}
			setChildPolicyCache(c)
		}
	case []any:
		for _, c := range v {
			setChildPolicyCache(c)
		}
	}
}
