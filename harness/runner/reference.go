package runner

import (
	"context"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference"
)

// Reference is conform's own policy stack in this process: in the
// simulator, on virtual time, and in the lab, as a real grpc-go channel on
// wall time; in both, its policies are wrapped in the recorder, so that its
// traces carry the policy's own events.
var Reference Impl = referenceImpl{}

type referenceImpl struct{}

func (referenceImpl) String() string { return reference.Impl }

func (referenceImpl) runSim(ctx context.Context, s *scenario.Scenario, opts Options) (*trace.Trace, error) {
	return simReference(ctx, s, opts)
}

func (referenceImpl) labClient(_ context.Context, s *scenario.Scenario) (labClient, error) {
	sw, err := reference.ParseSwitches(s.Client.Env)
	if err != nil {
		return nil, err
	}
	c := &inProcess{name: reference.Impl, switches: sw, recorded: true}
	if s.Client.Target != scenario.TargetXDS { // an xDS client's policy is the resolver's tree
		if c.policy, c.config, err = sw.Policy(s.Client.EffectiveServiceConfig()); err != nil {
			return nil, err
		}
	}
	return c, nil
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

// stepPolicy is the reference policy and its JSON config for a config step.
func stepPolicy(a scenario.SetConfig, sw reference.Switches) (name, config string, err error) {
	c := scenario.Client{LBPolicy: a.LBPolicy, LBConfig: a.LBConfig, ServiceConfig: a.ServiceConfig}
	return sw.Policy(c.EffectiveServiceConfig())
}
