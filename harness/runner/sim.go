package runner

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/drivers/go/protocol"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/xdsres"
	"github.com/conformlab/conform/reference"
	"github.com/conformlab/conform/reference/xds/client"
)

// simReference runs s against the reference in the simulator, on virtual
// time. The same scenario and seed give the same trace, byte for byte.
func simReference(ctx context.Context, s *scenario.Scenario, opts Options) (*trace.Trace, error) {
	var policy, config string
	env, err := reference.ParseSwitches(s.Client.Env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if s.Client.Target == scenario.TargetXDS {
		// The tree's config comes with the first configuration (xdsPush).
		policy, err = xdsInitialRoot(s, env)
	} else {
		policy, config, err = env.Policy(s.Client.EffectiveServiceConfig())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	sr := &simRun{s: s, env: env, policy: policy}
	return sr.simulate(ctx, reference.Impl, config, opts, func(w *sim.Channel) error {
		if s.Client.Target != scenario.TargetXDS {
			return nil
		}
		sr.dns, sr.dnsLast = &xdsDNS{onQuery: w.Record}, map[string][]string{}
		sr.ads, err = newSimADS(s.Client.Listener, env, w.Record)
		return err
	})
}

// simIdleTimeout is the simulated channel's idle timeout: the scenario's
// client.idle_timeout, or, when it sets none, the default of the channel
// the simulator models, grpc-go's (sim.DefaultIdleTimeout), in a run that
// outlasts it. A shorter run could not see the default fire, and its
// channel records no channel-state events (harness/sim, idle.go), as
// before the default was modelled.
func simIdleTimeout(s *scenario.Scenario) time.Duration {
	if s.Client.IdleTimeout > 0 {
		return s.Client.IdleTimeout
	}
	if s.End > sim.DefaultIdleTimeout {
		return sim.DefaultIdleTimeout
	}
	return 0
}

// simulate builds the simulated channel with sr's policy and config, and
// the scenario's backends, lets setup add to it, and carries out the
// timeline; the trace names the implementation name.
func (sr *simRun) simulate(ctx context.Context, name, config string, opts Options, setup func(*sim.Channel) error) (*trace.Trace, error) {
	s := sr.s
	// The client's health checking (A17's healthCheckConfig), as the
	// simulated channel's: which service name its health listeners hear.
	service, on, err := scenario.HealthCheckService(s.Client.EffectiveServiceConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	sr.health = healthCheck{service, on}
	w, err := sim.New(sr.policy, config, sim.Options{Seed: opts.Seed, HealthService: service, NoHealthCheck: !on, IdleTimeout: simIdleTimeout(s)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer w.Close()
	sr.w, sr.faults, sr.down = w, map[string]scenario.SetFault{}, map[string]bool{}
	if err := setup(w); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	for i, b := range s.Backends {
		var addrs []string
		for _, fam := range b.Stack.Families() {
			addrs = append(addrs, AddrOf(b.Name, i, fam))
		}
		w.AddBackend(b.Name, addrs...)
	}
	tl, err := newTimeline(s, AddrOf, sr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	runErr := tl.run(ctx)
	t := &trace.Trace{Header: trace.NewHeader(s, name, trace.ModeSim, opts.Seed), Events: w.Events()}
	if runErr != nil {
		return t, fmt.Errorf("%s (sim): %w", s.Name, runErr)
	}
	return t, nil
}

// simRun carries out a timeline on a simulated channel (sim.Channel).
type simRun struct {
	s      *scenario.Scenario
	w      *sim.Channel
	env    reference.Switches           // the reference's options from the scenario's environment
	linked bool                         // grpc-go's own policies (LinkedGRPCGo), not the reference's
	mapped protocol.PolicyMap           // with linked: a user's policies standing in for standard ones (Linked)
	policy string                       // the reference policy the channel was built with
	faults map[string]scenario.SetFault // per concrete address
	down   map[string]bool              // backends taken down
	health healthCheck                  // the client's health checking, for the whole run

	// With scenario.TargetXDS: the xDS exchange, the xds steps applied so
	// far, and the LOGICAL_DNS answers (xdsDNS, the last per cluster).
	ads     *simADS
	xdsN    int
	dns     *xdsDNS
	dnsLast map[string][]string
	cfg     *client.Config // the latest configuration
	cfgErr  error          // the latest error, when newer than cfg
}

func (sw *simRun) now() time.Duration    { return sw.w.Now() }
func (sw *simRun) events() []trace.Event { return sw.w.Events() }

func (sw *simRun) advance(ctx context.Context, cond func() bool, until time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for {
		d := until - sw.w.Now()
		if d <= 0 || cond() {
			return ctx.Err()
		}
		if sw.ads == nil {
			sw.w.AdvanceUntil(cond, d)
			return ctx.Err()
		}
		// The xDS resolver answers the policy's re-resolution requests with
		// its state again (LOGICAL_DNS looked up anew): stop at each one.
		n := sw.w.ResolveNowCount()
		asked := func() bool { return sw.w.ResolveNowCount() != n }
		sw.w.AdvanceUntil(func() bool { return cond() || asked() }, d)
		if !asked() {
			return ctx.Err()
		}
		if err := sw.xdsPush(); err != nil {
			return err
		}
	}
}

var simFaults = map[scenario.FaultType]sim.Fault{
	"": sim.FaultNone, scenario.Drop: sim.FaultDrop, scenario.Reset: sim.FaultReset,
	scenario.Stall: sim.FaultStall, scenario.Down: sim.FaultDown, scenario.FailRPCs: sim.FaultFailRPCs,
}

func (sw *simRun) apply(a scenario.Action) error {
	switch a := a.(type) {
	case scenario.ResolverUpdate:
		if sw.s.Client.Target == scenario.TargetDNS {
			// The simulated channel's resolver is the DNS resolver: the
			// records come back one endpoint per address.
			a = scenario.DNSAnswer(a)
		}
		st, eps, err := sw.resolverState(a)
		if err != nil {
			return err
		}
		if sw.ads != nil {
			sw.dns.update(eps) // the xDS client's DNS, not the channel's resolver
			return nil
		}
		return sw.w.Resolve(st)
	case scenario.SetXDS:
		return sw.xds(a.Resources)
	case scenario.SetFault:
		return sw.setFault(a)
	case scenario.ClearFault:
		return sw.setFault(scenario.SetFault{Addr: a.Addr})
	case scenario.BackendDown:
		return sw.setDown(a.Backend, true)
	case scenario.BackendUp:
		return sw.setDown(a.Backend, false)
	case scenario.SetHealth:
		return sw.setHealth(a)
	case scenario.StartRPC:
		sw.w.StartRPC(a.ID, sim.RPCOptions{WaitForReady: a.WaitForReady, Deadline: a.Deadline, Metadata: metadata.New(a.Metadata)})
		return nil
	case scenario.SetConfig:
		return sw.setConfig(a)
	}
	return fmt.Errorf("the simulator cannot apply %s", a.Kind())
}

// xds is an xds step: the management server's resources change, the
// exchange runs to quiet (ACKs, NACKs and subscriptions recorded as the lab
// server records them), and the configuration the client then holds, if it
// changed, reaches the policy as the reference resolver pushes it: one
// resolver update carrying A75's tree as its LB config.
func (sw *simRun) xds(x xds.Resources) error {
	if sw.ads == nil {
		return fmt.Errorf("an xds step needs client.target %s", scenario.TargetXDS)
	}
	sw.xdsN++
	res, err := xdsres.Build(sw.s, x, xdsOptions)
	if err != nil {
		return err
	}
	sw.ads.setResources(xdsres.Version(x, sw.xdsN), res)
	if cfg, cfgErr, ok := sw.ads.take(); ok {
		if cfgErr != nil {
			sw.cfgErr = cfgErr
		} else {
			sw.cfg, sw.cfgErr = cfg, nil
		}
		return sw.xdsPush()
	}
	return nil
}

// xdsPush is the reference resolver pushing its state: the error that
// leaves the listener without a configuration (ReportError), or the latest
// configuration as a resolver update with A75's tree.
func (sw *simRun) xdsPush() error {
	if sw.cfgErr != nil {
		sw.w.ResolverError(sw.cfgErr)
		return nil
	}
	if sw.cfg == nil {
		return nil
	}
	eps, tree, err := xdsState(sw.cfg, sw.dns.lookupHost, sw.dnsLast)
	if err != nil {
		sw.w.ResolverError(err)
		return nil
	}
	root, config, err := rootPolicy([]byte(tree))
	if err != nil {
		return err
	}
	if config, err = sw.env.Config(root, config); err != nil {
		return err
	}
	if root != sw.policy {
		return fmt.Errorf("the simulator cannot change the root policy from %s to %s during a run", sw.policy, root)
	}
	return sw.w.ResolveConfig(resolver.State{Endpoints: eps}, config)
}

// setConfig gives the channel's policy its new config; a config naming
// another policy switches to it gracefully, as a channel does.
func (sw *simRun) setConfig(a scenario.SetConfig) error {
	policy, config, err := sw.stepPolicy(a)
	if err != nil {
		return err
	}
	if a.ServiceConfig != "" {
		service, on, err := scenario.HealthCheckService(a.ServiceConfig)
		if err != nil {
			return err
		}
		if (healthCheck{service, on}) != sw.health {
			return fmt.Errorf("the simulator cannot change the client's healthCheckConfig during a run")
		}
	}
	if policy != sw.policy {
		// Another policy: built beside the running one, which serves until
		// the new one may be picked from (L9, Swapping out balancer).
		sw.policy = policy
		return sw.w.SetPolicy(policy, config)
	}
	return sw.w.SetConfig(config)
}

// simHealth maps the health statuses an address can serve to the states a
// health listener reports (scenario: runners at the balancer API map them so).
var simHealth = map[string]connectivity.State{
	scenario.Serving: connectivity.Ready, scenario.NotServing: connectivity.TransientFailure,
}

// healthCheck is a client's health checking: on, for the health service
// name service (scenario.HealthCheckService).
type healthCheck struct {
	service string
	on      bool
}

// setHealth sets what an address serves for one health service name; the
// simulated channel hears it if its client checks that name.
func (sw *simRun) setHealth(h scenario.SetHealth) error {
	addr, err := sw.s.Concrete(h.Addr, AddrOf)
	if err != nil {
		return err
	}
	st, ok := simHealth[h.Status]
	if !ok {
		return fmt.Errorf("the simulator has no health state for status %q", h.Status)
	}
	sw.w.SetServiceHealth(addr, h.Service, st)
	return nil
}

// setFault applies a fault step; one without a fault clears the address.
// While the address's backend is down the fault is only remembered.
func (sw *simRun) setFault(f scenario.SetFault) error {
	if _, ok := simFaults[f.Fault]; !ok {
		return fmt.Errorf("the simulator cannot apply fault %q", f.Fault)
	}
	addr, err := sw.s.Concrete(f.Addr, AddrOf)
	if err != nil {
		return err
	}
	if f.Fault == "" {
		delete(sw.faults, addr)
	} else {
		sw.faults[addr] = f
	}
	backend, _, _ := f.Addr.Split()
	if sw.down[backend] && !firewalled(f.Fault) {
		return nil
	}
	return sw.applyFault(addr, f)
}

// applyFault puts fault f in force on the simulated network at addr.
func (sw *simRun) applyFault(addr string, f scenario.SetFault) error {
	if f.Fault != scenario.FailRPCs {
		sw.w.SetFault(addr, simFaults[f.Fault])
		return nil
	}
	code, ok := trace.ParseCode(f.FailCode())
	if !ok {
		return fmt.Errorf("fault %s: unknown status code %q", f.Fault, f.FailCode())
	}
	sw.w.FailRPCs(addr, code)
	return nil
}

// firewalled reports whether f acts before a backend's listener, as the
// lab's firewall does: a dropped or reset SYN is dropped or reset whether
// the backend is up or down.
func firewalled(f scenario.FaultType) bool { return f == scenario.Drop || f == scenario.Reset }

// setDown models a backend taken down as FaultDown on each of its
// addresses (its live connections die), then the address's own fault where
// the lab's firewall would still apply it; it restores their own faults
// when the backend comes back.
func (sw *simRun) setDown(backend string, down bool) error {
	i := sw.s.BackendIndex(backend)
	if i < 0 {
		return fmt.Errorf("no backend %q", backend)
	}
	sw.down[backend] = down
	for _, fam := range sw.s.Backends[i].Stack.Families() {
		addr := AddrOf(backend, i, fam)
		own := sw.faults[addr]
		if !down {
			if err := sw.applyFault(addr, own); err != nil {
				return err
			}
			continue
		}
		if firewalled(own.Fault) {
			sw.w.SetFaultClosing(addr, simFaults[own.Fault])
		} else {
			sw.w.SetFault(addr, sim.FaultDown)
		}
	}
	return nil
}

// resolverState is the resolver state the policy receives for a resolver
// update: the reference's (resolverState), or, for grpc-go's own policies,
// the endpoints alone: conform's endpoint attributes are the reference's.
func (sw *simRun) resolverState(u scenario.ResolverUpdate) (resolver.State, [][]string, error) {
	if !sw.linked {
		return resolverState(sw.s, u)
	}
	return linkedResolverState(sw.s, u)
}

// stepPolicy is a config step's policy and config, in the names the
// channel's policies are registered under.
func (sw *simRun) stepPolicy(a scenario.SetConfig) (policy, config string, err error) {
	if sw.linked {
		return linkedPolicy(scenario.Client{LBPolicy: a.LBPolicy, LBConfig: a.LBConfig, ServiceConfig: a.ServiceConfig}, sw.mapped)
	}
	return stepPolicy(a, sw.env)
}
