// Package childconfig reads the child policy of a parent policy's config: a
// LoadBalancingConfig list, of which the first registered policy is used, as
// such a list is read everywhere in gRPC (A56's Child.config, A28's
// Target.child_policy).
package childconfig

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/serviceconfig"
)

// Parse picks the first policy of list that is registered in the grpc-go
// balancer registry and parses its config with that policy's own parser (a
// missing or null config parses as {}; a policy without a parser gets a nil
// config). field is the list's name in the parent's config, for errors.
// Every entry must name exactly one policy, registered or not.
func Parse(field string, list []map[string]json.RawMessage) (policy string, config serviceconfig.LoadBalancingConfig, err error) {
	var names []string
	for _, entry := range list {
		if len(entry) != 1 {
			return "", nil, fmt.Errorf("%s entry has %d policies, want 1", field, len(entry))
		}
		for name, raw := range entry {
			names = append(names, name)
			if policy != "" {
				continue
			}
			b := balancer.Get(name)
			if b == nil {
				continue
			}
			policy = name
			if p, ok := b.(balancer.ConfigParser); ok {
				if len(raw) == 0 || string(raw) == "null" {
					raw = json.RawMessage("{}")
				}
				c, err := p.ParseConfig(raw)
				if err != nil {
					return "", nil, fmt.Errorf("policy %q: %v", name, err)
				}
				config = c
			}
		}
	}
	if policy == "" {
		return "", nil, fmt.Errorf("no registered policy among %v", names)
	}
	return policy, config, nil
}
