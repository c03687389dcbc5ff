// Package runner runs a scenario against an implementation in one mode and
// returns its trace: in simulation (harness/sim, virtual time, Go balancers
// only) or in the lab (netlab, real sockets, wall time).
//
// Both modes carry out the same timeline (steps at times and after events)
// and name addresses the same way: backend i's addresses are the lab's
// (netlab.BackendAddr) on port netlab.DefaultPort, so that a simulated and a
// lab trace of one scenario compare lane by lane.
package runner

import (
	"encoding/json"
	"fmt"
	"net/netip"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/reference"
)

// Options configure a run.
type Options struct {
	// Seed seeds the run's randomness (the policy's, and backoff jitter in
	// simulation). Recorded in the trace header.
	Seed uint64
}

// AddrOf is the address plan every runner uses: the lab's.
func AddrOf(_ string, index int, fam scenario.Family) string {
	return netip.AddrPortFrom(netlab.BackendAddr(index, fam == scenario.IPv6), netlab.DefaultPort).String()
}

// resolverState is the resolver state the reference receives for a
// scenario's resolver update, in every mode: concrete addresses per endpoint
// and the endpoint attributes as the reference reads them
// (reference.Endpoint: "path" is A56's hierarchical path). It also returns
// the addresses per endpoint, as the resolver-update event records them.
func resolverState(s *scenario.Scenario, u scenario.ResolverUpdate) (resolver.State, [][]string, error) {
	eps, err := s.ConcreteEndpoints(u.Endpoints, AddrOf)
	if err != nil {
		return resolver.State{}, nil, err
	}
	var st resolver.State
	for i, addrs := range eps {
		e, err := reference.Endpoint(addrs, u.Endpoints[i].Attrs)
		if err != nil {
			return resolver.State{}, nil, err
		}
		st.Endpoints = append(st.Endpoints, e)
	}
	return st, eps, nil
}

// referencePolicy returns the reference policy and its JSON config for the
// scenario's client configuration: LBPolicy/LBConfig, or the first entry of
// a service config's loadBalancingConfig, or pick_first by default; with
// the options env gives it.
func referencePolicy(c scenario.Client, env referenceEnv) (name, config string, err error) {
	std, cfg := c.LBPolicy, c.LBConfig
	if c.ServiceConfig != "" {
		if std, cfg, err = firstLBConfig(c.ServiceConfig); err != nil {
			return "", "", err
		}
	}
	if std == "" {
		std = "pick_first"
	}
	name, ok := reference.Name(std)
	if !ok {
		return "", "", fmt.Errorf("the reference has no policy %q", std)
	}
	if cfg == "" {
		cfg = "{}"
	}
	if config, err = reference.RewriteConfig(cfg); err != nil {
		return "", "", err
	}
	config, err = env.lbConfig(name, config)
	return name, config, err
}

// stepPolicy is referencePolicy for a config step: the reference policy
// and its JSON config (standard names rewritten by reference.RewriteConfig).
func stepPolicy(a scenario.SetConfig, env referenceEnv) (name, config string, err error) {
	return referencePolicy(scenario.Client{LBPolicy: a.LBPolicy, LBConfig: a.LBConfig, ServiceConfig: a.ServiceConfig}, env)
}

// firstLBConfig returns the first policy of a service config's
// loadBalancingConfig list.
func firstLBConfig(serviceConfig string) (name, config string, err error) {
	var sc struct {
		LoadBalancingConfig []map[string]json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal([]byte(serviceConfig), &sc); err != nil {
		return "", "", fmt.Errorf("client.service_config: %w", err)
	}
	if len(sc.LoadBalancingConfig) == 0 {
		return "", "", nil
	}
	for k, v := range sc.LoadBalancingConfig[0] {
		return k, string(v), nil
	}
	return "", "", fmt.Errorf("client.service_config: loadBalancingConfig[0] is empty")
}
