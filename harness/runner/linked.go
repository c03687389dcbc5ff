package runner

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/drivers/go/protocol"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference"
)

// LinkedGRPCGo is grpc-go's own policies, of the version conform is built
// with, in this process: in the lab, a real channel whose policy is the
// scenario's (in standard names; grpc-go's default pick_first without one),
// seen from outside only, as a third party is; and on the simulator's
// channel, on wall time. `conform lab demo` runs it.
var LinkedGRPCGo Impl = linkedImpl{}

// Linked is LinkedGRPCGo with the policies of a user's balancer linked
// into this process standing in for the scenarios' standard ones (the
// mapping of `verify --policy`; any depth of the service config, and
// grpc-go's default pick_first), named name. A scenario whose policy
// this process has not registered, under its mapped name, is
// not-applicable.
//
// It judges the user's code only: a scenario whose policies are all
// grpc-go's own builders (none mapped, none replaced by the user's module)
// is not-applicable. The simulator models a channel, not grpc-go's
// transport (its connection errors name no address, say), and grpc-go's
// own policies are not what a user's column is about; the lab judges such
// a scenario as it runs.
//
// env are the gRPC switches this process was started with (grpc-go reads
// them once, from the process's environment): a scenario whose switches
// are exactly these can run, one with others is not-applicable. The
// caller starts one process per set of switches (harness/simjudge).
func Linked(name string, policies protocol.PolicyMap, env map[string]string) Impl {
	return linkedImpl{name: name, policies: policies, usersOnly: true, env: env}
}

type linkedImpl struct {
	name      string             // "" for LinkedGRPCGo's
	policies  protocol.PolicyMap // nil for LinkedGRPCGo
	usersOnly bool               // not-applicable unless a policy is the user's (Linked)
	env       map[string]string  // the switches this process runs with
}

func (l linkedImpl) String() string {
	if l.name != "" {
		return l.name
	}
	return "grpc-go@v" + grpc.Version + " (linked)"
}

// runSim runs grpc-go's own policy on the simulator's channel. Its
// policies read the wall clock, so the simulator runs on wall time for them
// (harness/sim): a run takes as long as its timers.
func (l linkedImpl) runSim(ctx context.Context, s *scenario.Scenario, opts Options) (*trace.Trace, error) {
	if err := l.expressible(s); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	policy, config, err := linkedPolicy(s.Client, l.policies)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	sr := &simRun{s: s, policy: policy, linked: true, mapped: l.policies}
	return sr.simulate(ctx, l.String(), config, opts, func(*sim.Channel) error { return nil })
}

// expressible says why s cannot run against grpc-go's own policies in this
// process, or nil.
func (l linkedImpl) expressible(s *scenario.Scenario) error {
	switch {
	case !maps.Equal(s.Client.Env, l.env): // nil and empty are equal
		return &NotApplicable{Reason: fmt.Sprintf("%s reads its switches from the process's environment, which runs share: this process has %v, the scenario sets %v", l, l.env, s.Client.Env)}
	case s.Client.Target == scenario.TargetXDS:
		return &NotApplicable{Reason: l.String() + " runs no xDS client in this process"}
	}
	users := false
	for _, p := range policiesOrDefault(s) {
		name := p
		if mapped, ok := l.policies[p]; ok {
			name = mapped
		}
		b := balancer.Get(name)
		if b == nil {
			return &NotApplicable{Reason: fmt.Sprintf("%s has no LB policy %s in this process", l, name)}
		}
		users = users || !isGRPCGos(b)
	}
	if l.usersOnly && !users {
		return &NotApplicable{Reason: fmt.Sprintf("the scenario runs grpc-go's own %s, none of it yours (no mapped policy); the simulator judges your policies only, the lab judges this scenario as it runs", strings.Join(policiesOrDefault(s), ", "))}
	}
	return nil
}

// policiesOrDefault are the standard policies s uses, or grpc-go's
// default, pick_first, for a client that names none.
func policiesOrDefault(s *scenario.Scenario) []string {
	if ps := scenarioPolicies(s); len(ps) > 0 {
		return ps
	}
	return []string{"pick_first"}
}

// isGRPCGos reports whether b is one of grpc-go's own builders, not one a
// user's module registered (under its own name, or replacing a standard
// one).
func isGRPCGos(b balancer.Builder) bool {
	t := reflect.TypeOf(b)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.HasPrefix(t.PkgPath(), "google.golang.org/grpc/")
}

func (l linkedImpl) labClient(_ context.Context, s *scenario.Scenario) (labClient, error) {
	if err := l.expressible(s); err != nil {
		return nil, err
	}
	policy, config, err := linkedPolicy(s.Client, l.policies)
	if err != nil {
		return nil, err
	}
	return &inProcess{name: l.String(), policy: policy, config: config, mapped: l.policies}, nil
}

// linkedPolicy is the client's policy and its config, in grpc-go's
// registered (standard) names, the mapped ones renamed.
func linkedPolicy(c scenario.Client, mapped protocol.PolicyMap) (policy, config string, err error) {
	sc, err := mapped.Rewrite(c.EffectiveServiceConfig())
	if err != nil {
		return "", "", err
	}
	return reference.FirstLBConfig(sc)
}

// linkedResolverState is the resolver state grpc-go's own policies receive
// for a resolver update: the endpoints alone (conform's endpoint
// attributes are the reference's).
func linkedResolverState(s *scenario.Scenario, u scenario.ResolverUpdate) (resolver.State, [][]string, error) {
	eps, err := s.ConcreteEndpoints(u.Endpoints, AddrOf)
	if err != nil {
		return resolver.State{}, nil, err
	}
	var st resolver.State
	for i, addrs := range eps {
		if len(u.Endpoints[i].Attrs) > 0 {
			return resolver.State{}, nil, &NotApplicable{Reason: "grpc-go's own policies do not read conform's endpoint attributes"}
		}
		var e resolver.Endpoint
		for _, a := range addrs {
			e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
		}
		st.Endpoints = append(st.Endpoints, e)
	}
	return st, eps, nil
}
