package protocol

import (
	"fmt"
	"maps"
	"runtime/debug"

	"google.golang.org/grpc/balancer"
)

// UserBalancer makes base the options of a driver built with a user's
// balancer module (module, its import path), run with the policy mapping
// of the driver's environment (PolicyMapEnv, given as mapping): hello names
// the module, the grpc-go under it and the mapping, lists the standard policies the
// build can express through the mapping, and every service config has the
// mapped policies renamed. The capabilities that describe a mapped
// policy (PolicyCapabilities) are the ones the user declares (declared,
// from CanEnv), not grpc-go's for its own. A mapping onto a policy the
// build has not registered is an error naming it.
//
// With a mapping, hello says the driver cannot express xDS: an xDS
// client's policies come from its resources, through grpc-go's own
// registry of xDS policies, which no mapping of the channel's service
// config reaches; its verdicts would judge grpc-go's policies, not the
// user's.
func UserBalancer(base Options, module, mapping, declared string) (Options, error) {
	m, err := ParsePolicyMap(mapping)
	if err != nil {
		return base, fmt.Errorf("%s: %w", PolicyMapEnv, err)
	}
	can, err := ParseCan(m, declared)
	if err != nil {
		return base, fmt.Errorf("%s: %w", CanEnv, err)
	}
	registered := func(name string) bool { return balancer.Get(name) != nil }
	for _, yours := range m.Targets() {
		if !registered(yours) {
			return base, fmt.Errorf("the policy mapping names %s, which this build has not registered: %s did not call balancer.Register with a builder named %q (in an init of the package at the module's root, which the driver imports)", yours, module, yours)
		}
	}
	base.Impl = "go:" + module
	base.Version = moduleVersion(module) + " on grpc-go " + GRPCVersion()
	if len(m) > 0 { // so that a trace says which policies ran
		base.Version += " [" + m.String() + "]"
	}
	base.Policies = m.Policies(registered)
	base.ServiceConfig = m.Rewrite
	if len(m) > 0 {
		base.Can = maps.Clone(base.Can)
		if base.Can == nil {
			base.Can = map[string]bool{}
		}
		base.Can["xds"] = false
		m.Capabilities(base.Can, can)
	}
	return base, nil
}

// moduleVersion is the version of module linked into this binary: its
// module version, or "local" for a module replaced by a directory.
func moduleVersion(module string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path != module {
			continue
		}
		if d.Replace != nil && (d.Replace.Version == "" || d.Replace.Version == "(devel)") {
			return "local" // replaced by a directory
		}
		return d.Version
	}
	return "unknown"
}
