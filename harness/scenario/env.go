package scenario

import (
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// The gRPC environment variables a scenario may set for the client under
// test (Client.Env): the temporary switches the documents name, and no
// others. Each is a boolean switch; its value is "true" or "false".
const (
	// EnvAggregateClusterBackwardCompat is A75's migration switch (A75,
	// Aggregate Cluster Changes): "true" has the underlying clusters of an
	// aggregate use the LB policy configured on the aggregate.
	EnvAggregateClusterBackwardCompat = "GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT"
	// EnvXDSDualstackEndpoints guards reading EDS's additional_addresses
	// (A61, Temporary environment variable protection).
	EnvXDSDualstackEndpoints = "GRPC_EXPERIMENTAL_XDS_DUALSTACK_ENDPOINTS"
	// EnvPickFirstLBConfig guards pick_first's shuffleAddressList and
	// pick_first through xDS (A62, Temporary environment variable
	// protection).
	EnvPickFirstLBConfig = "GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG"
	// EnvPriorityChildPolicyCache reverts A115's change to A56: "true"
	// brings back the retention of children removed from the priority
	// policy's config (A115, Temporary environment variable protection).
	EnvPriorityChildPolicyCache = "GRPC_EXPERIMENTAL_ENABLE_PRIORITY_LB_CHILD_POLICY_CACHE"
	// EnvRingHashRequestHashKey guards ring_hash's requestHashHeader (A76,
	// Temporary environment variable protection).
	EnvRingHashRequestHashKey = "GRPC_EXPERIMENTAL_RING_HASH_SET_REQUEST_HASH_KEY"
)

// EnvVars lists the variables a scenario may set, sorted.
func EnvVars() []string {
	return []string{
		EnvPriorityChildPolicyCache,
		EnvPickFirstLBConfig,
		EnvRingHashRequestHashKey,
		EnvXDSDualstackEndpoints,
		EnvAggregateClusterBackwardCompat,
	}
}

// EnvList is env as "NAME=value" entries sorted by name, the form of a
// process's environment.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Env sets the gRPC environment variable name to value for the client
// under test (one of EnvVars; "true" or "false").
func (b *Builder) Env(name, value string) *Builder {
	if b.s.Client.Env == nil {
		b.s.Client.Env = map[string]string{}
	}
	b.s.Client.Env[name] = value
	return b
}

// checkEnv accepts the variables of EnvVars with the values "true" and
// "false"; a problem names the variable's field, "client.env.NAME".
func checkEnv(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		f := "client.env." + k
		if !slices.Contains(EnvVars(), k) {
			return form.FieldErr(f, "unknown variable %q (want one of %s)", k, strings.Join(EnvVars(), ", "))
		}
		if v := env[k]; v != "true" && v != "false" {
			return form.FieldErr(f, "value %q (want true or false)", v)
		}
	}
	return nil
}

// envLines records the line of each variable of a client's env mapping,
// so that Validate's errors on "client.env.NAME" are placed on it.
func (r *reader) envLines(n *yaml.Node, path string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		r.Seen(n.Content[i], form.Join(path, n.Content[i].Value))
	}
}
