package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// PolicyMapEnv is the environment variable through which conform gives a
// driver built with a user's balancer the policy mapping of `conform
// verify --policy` (PolicyMap.String's form).
const PolicyMapEnv = "CONFORM_POLICY_MAP"

// PolicyMap maps the standard LB policy names conform's scenarios use
// (KnownPolicies) onto the names a user's balancer registers:
// pick_first → acme_pick_first.
type PolicyMap map[string]string

// ParsePolicyMap parses mappings STANDARD=YOURS, each argument one or more
// joined by commas ("pick_first=acme_pick_first,round_robin=acme_rr");
// an empty argument maps nothing. A standard name conform's scenarios do not use, a policy mapped twice and
// a malformed name are errors saying what would be right.
func ParsePolicyMap(args ...string) (PolicyMap, error) {
	m := PolicyMap{}
	for _, arg := range args {
		if arg == "" {
			continue
		}
		for _, pair := range strings.Split(arg, ",") {
			if err := m.add(pair); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m PolicyMap) add(pair string) error {
	std, yours, ok := strings.Cut(strings.TrimSpace(pair), "=")
	switch {
	case !ok || std == "" || yours == "":
		return fmt.Errorf("policy mapping %q: want STANDARD=YOURS, e.g. pick_first=acme_pick_first", pair)
	case !slices.Contains(KnownPolicies, std):
		return fmt.Errorf("policy mapping %q: %s is not a policy conform's scenarios use (they use %s)", pair, std, strings.Join(KnownPolicies, ", "))
	case strings.ContainsAny(yours, " \t\n\"=,"):
		return fmt.Errorf("policy mapping %q: %q is not an LB policy name (the name your balancer's builder returns, as balancer.Register registers it)", pair, yours)
	}
	if prev, dup := m[std]; dup && prev != yours {
		return fmt.Errorf("policy mapping %q: %s is mapped already, onto %s (map each policy once)", pair, std, prev)
	}
	m[std] = yours
	return nil
}

// String is the mapping as ParsePolicyMap reads it, sorted by standard
// name: "pick_first=acme_pick_first,round_robin=acme_rr".
func (m PolicyMap) String() string {
	pairs := make([]string, 0, len(m))
	for std, yours := range m {
		pairs = append(pairs, std+"="+yours)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// Targets are the user's policy names the mapping maps onto, sorted.
func (m PolicyMap) Targets() []string {
	var out []string
	for _, yours := range m {
		if !slices.Contains(out, yours) {
			out = append(out, yours)
		}
	}
	sort.Strings(out)
	return out
}

// Policies are the standard names a driver with this mapping can express:
// a mapped one when its target is registered, another when it is.
func (m PolicyMap) Policies(registered func(name string) bool) []string {
	var out []string
	for _, std := range KnownPolicies {
		name := std
		if yours, ok := m[std]; ok {
			name = yours
		}
		if registered(name) {
			out = append(out, std)
		}
	}
	return out
}

// Rewrite renames the mapped policies in a service config: in every list
// of LB configs (a JSON array of objects with one key each, the policy's
// name: loadBalancingConfig, a child policy, at any depth) and in the
// deprecated loadBalancingPolicy. A config that names no policy runs
// grpc-go's default, pick_first: if pick_first is mapped, the rewritten
// config names its target instead. Other fields are kept.
func (m PolicyMap) Rewrite(serviceConfig string) (string, error) {
	if len(m) == 0 {
		return serviceConfig, nil
	}
	sc := map[string]any{}
	if strings.TrimSpace(serviceConfig) != "" {
		dec := json.NewDecoder(strings.NewReader(serviceConfig))
		dec.UseNumber()
		if err := dec.Decode(&sc); err != nil {
			return "", fmt.Errorf("service config: %w", err)
		}
	}
	_, hasConfig := sc["loadBalancingConfig"]
	_, hasPolicy := sc["loadBalancingPolicy"]
	if yours, ok := m["pick_first"]; ok && !hasConfig && !hasPolicy {
		sc["loadBalancingConfig"] = []any{map[string]any{yours: map[string]any{}}}
	}
	if p, ok := sc["loadBalancingPolicy"].(string); ok {
		if yours, mapped := m[p]; mapped {
			sc["loadBalancingPolicy"] = yours
		}
	}
	m.rename(sc)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sc); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}

// rename walks v, renaming the mapped policies of every LB config list.
func (m PolicyMap) rename(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, child := range v {
			m.rename(child)
		}
	case []any:
		for i, el := range v {
			if obj, ok := el.(map[string]any); ok && len(obj) == 1 {
				for name, cfg := range obj {
					if yours, mapped := m[name]; mapped {
						v[i] = map[string]any{yours: cfg}
					}
				}
			}
			m.rename(v[i])
		}
	}
}

// CanEnv is the environment variable through which conform gives a driver
// built with a user's balancer the capabilities the user declares for it
// (`conform verify --can`), joined by commas.
const CanEnv = "CONFORM_CAN"

// PolicyCapabilities are the capabilities hello declares that describe a
// standard policy's own features, not the channel's: grpc-go's claims for
// its pick_first (shuffleAddressList, gRFC A62) and its ring_hash (the
// request hash header, A76). A policy mapped onto a user's has them only
// where the user declares them (ParseCan).
var PolicyCapabilities = map[string][]string{
	"pick_first":             {"shuffle", "connection_attempt_delay"},
	"ring_hash_experimental": {"request_hash_header"},
}

// ParseCan parses the capabilities a user declares for the policies m
// maps, one or more per argument joined by commas: each must be one of
// PolicyCapabilities' for a mapped policy.
func ParseCan(m PolicyMap, args ...string) ([]string, error) {
	var out []string
	for _, arg := range args {
		for _, c := range strings.Split(arg, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			std := policyOf(c)
			switch {
			case std == "":
				return nil, fmt.Errorf("capability %q: not one a balancer declares (%s)", c, declarable())
			case m[std] == "":
				return nil, fmt.Errorf("capability %q is %s's, which no mapping maps onto yours (map it: %s=<your policy>)", c, std, std)
			}
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func policyOf(capability string) string {
	for std, caps := range PolicyCapabilities {
		if slices.Contains(caps, capability) {
			return std
		}
	}
	return ""
}

func declarable() string {
	var out []string
	for std, caps := range PolicyCapabilities {
		for _, c := range caps {
			out = append(out, c+" ("+std+")")
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Capabilities sets, in can, the capabilities of every mapped policy to
// what the user declared: grpc-go's claims were about its own policy.
func (m PolicyMap) Capabilities(can map[string]bool, declared []string) {
	for std := range m {
		for _, c := range PolicyCapabilities[std] {
			can[c] = slices.Contains(declared, c)
		}
	}
}
