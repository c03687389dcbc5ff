// Package reference is conform's reference implementation: importing it
// registers every reference policy with grpc-go's balancer registry.
//
// Scenarios name policies by their standard names ("pick_first",
// "priority_experimental"), so that one scenario runs against any
// implementation. The reference registers its policies under names that
// cannot collide with grpc-go's own (conform_*); Name and RewriteConfig
// translate standard names to the reference's.
package reference

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/conformlab/conform/reference/outlierdetection"
	"github.com/conformlab/conform/reference/overridehost"
	"github.com/conformlab/conform/reference/pickfirst"
	"github.com/conformlab/conform/reference/priority"
	"github.com/conformlab/conform/reference/ringhash"
	"github.com/conformlab/conform/reference/roundrobin"
	"github.com/conformlab/conform/reference/weightedtarget"
)

// Impl is the reference's implementation name in traces and reports.
const Impl = "reference"

// names maps standard LB policy names (as gRPC service configs spell them) to
// the reference policies that implement them.
var names = map[string]string{
	"pick_first":                     pickfirst.Name,
	"round_robin":                    roundrobin.Name,
	"priority_experimental":          priority.Name,
	"weighted_target_experimental":   weightedtarget.Name,
	"ring_hash_experimental":         ringhash.Name,
	"outlier_detection_experimental": outlierdetection.Name,
	"xds_override_host_experimental": overridehost.Name,
}

// StandardNames lists the standard policy names the reference implements,
// sorted.
func StandardNames() []string {
	out := make([]string, 0, len(names))
	for std := range names {
		out = append(out, std)
	}
	sort.Strings(out)
	return out
}

// Name returns the reference policy for a standard policy name, and whether
// the reference has one. A name that is already a reference name is returned
// as it is.
func Name(standard string) (string, bool) {
	if n, ok := names[standard]; ok {
		return n, true
	}
	for _, n := range names {
		if n == standard {
			return n, true
		}
	}
	return "", false
}

// RewriteConfig rewrites an LB config (or a whole loadBalancingConfig list)
// so that every standard policy name used as a key, at any depth (a priority
// child's config, say), becomes the reference's name.
func RewriteConfig(config string) (string, error) {
	if config == "" {
		return "", nil
	}
	var v any
	if err := json.Unmarshal([]byte(config), &v); err != nil {
		return "", fmt.Errorf("reference: LB config is not JSON: %w", err)
	}
	out, err := json.Marshal(rewrite(v))
	return string(out), err
}

func rewrite(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, val := range t {
			if n, ok := names[k]; ok {
				k = n
			}
			m[k] = rewrite(val)
		}
		return m
	case []any:
		for i := range t {
			t[i] = rewrite(t[i])
		}
		return t
	}
	return v
}
