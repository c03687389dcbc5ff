package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking (A17), which a service config may turn on
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"

	"github.com/conformlab/conform/drivers/go/protocol"
	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/reference"
)

// inProcess is a lab client in this process: a real grpc-go channel on the
// lab's dialer, with a manual resolver (or, for an xds target, the
// reference's xDS resolver). With recorded, its policy is the reference's,
// wrapped in the recorder, whose events share the lab's timebase; without,
// it is grpc-go's own (LinkedGRPCGo), seen from outside only.
type inProcess struct {
	name     string
	switches reference.Switches // the reference's options from the scenario's environment
	recorded bool
	policy   string // the reference policy and its config ("" with an xds target)
	config   string
	health   healthCheck        // the client's health checking (healthCheckConfig), kept in its service config
	mapped   protocol.PolicyMap // grpc-go's own: a user's policies standing in for standard ones (Linked)

	lr    *labRun
	res   *manual.Resolver
	cc    *grpc.ClientConn
	unreg func()

	// What a config step needs to wrap a new policy config as start
	// wrapped the first, and to push it with the last resolver state.
	sink string
	seed uint64
	last resolver.State             // the last resolver update pushed
	sc   *serviceconfig.ParseResult // the config steps' service config; nil: the default one

	wg     sync.WaitGroup // the state watcher and the RPCs
	states *stateLog      // what the state watcher has recorded
	mu     sync.Mutex
	rpcs   map[string]context.CancelFunc

	// With an xds target: the LOGICAL_DNS answers of the resolve steps,
	// and the policy's way to the xDS resolver's re-resolution.
	dns      *xdsDNS
	reResolv policyReResolution
}

// sinkSeq makes each lab run's recorder sink name unique in the process.
var sinkSeq struct {
	sync.Mutex
	n int
}

// start builds the channel: for an xds target, the reference xDS resolver
// (startXDS); otherwise a manual resolver, the lab's dialer, and the
// policy's service config.
func (c *inProcess) start(_ context.Context, lr *labRun, seed uint64) error {
	c.lr, c.seed = lr, seed
	c.rpcs, c.states = map[string]context.CancelFunc{}, newStateLog()
	service, on, err := scenario.HealthCheckService(lr.s.Client.EffectiveServiceConfig())
	if err != nil {
		return err
	}
	c.health = healthCheck{service, on}
	if c.recorded {
		sinkSeq.Lock()
		sinkSeq.n++
		c.sink = fmt.Sprintf("runner-lab-%d", sinkSeq.n)
		sinkSeq.Unlock()
		c.unreg = recorder.RegisterSink(c.sink, &timedSink{lr.log, lr.lab, c.reResolv.request})
	}
	switch lr.s.Client.Target {
	case scenario.TargetXDS:
		err = c.startXDS()
	case scenario.TargetDNS:
		err = c.startDNS()
	default:
		c.res = manual.NewBuilderWithScheme("conform")
		c.cc, err = grpc.NewClient("conform:///"+lr.s.Name, c.dialOptions(grpc.WithResolvers(c.res))...)
	}
	if err != nil {
		if c.unreg != nil {
			c.unreg()
		}
		return err
	}
	if lr.s.Client.Target != scenario.TargetDNS {
		c.cc.Connect() // builds the resolver, so that updates can be pushed
	}
	c.wg.Add(1)
	go c.watchStates()
	return nil
}

// dialOptions are the channel's options: the lab's dialer, the policy's
// service config, the scenario's idle timeout, and more.
func (c *inProcess) dialOptions(more ...grpc.DialOption) []grpc.DialOption {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(c.lr.lab.GRPCDialer()),
		grpc.WithDefaultServiceConfig(c.serviceConfig(c.policy, c.config)),
	}
	if d := c.lr.s.Client.IdleTimeout; d > 0 {
		opts = append(opts, grpc.WithIdleTimeout(d))
	}
	return append(opts, more...)
}

// startDNS builds a channel to the scenario's name in the lab DNS
// (labDNSBuilder) and starts the lab DNS; the channel leaves IDLE at the
// resolve step, which sets the records (resolveDNS).
func (c *inProcess) startDNS() error {
	if err := c.lr.startDNS(); err != nil {
		return err
	}
	var err error
	target := labDNSScheme + ":///" + net.JoinHostPort(dnsName(c.lr.s), strconv.Itoa(netlab.DefaultPort))
	c.cc, err = grpc.NewClient(target, c.dialOptions(grpc.WithResolvers(labDNSBuilder{c.lr.lab}))...)
	return err
}

// resolveDNS sets the records of the scenario's name, records the update as
// the DNS resolver returns it, and has the channel leave IDLE, which
// builds its resolver, the first time.
func (c *inProcess) resolveDNS(a scenario.ResolverUpdate) error {
	eps, err := c.lr.s.ConcreteEndpoints(scenario.DNSAnswer(a).Endpoints, AddrOf)
	if err != nil {
		return err
	}
	var addrs []netip.Addr
	for _, ep := range eps {
		ap, err := netip.ParseAddrPort(ep[0])
		if err != nil {
			return err
		}
		addrs = append(addrs, ap.Addr())
	}
	if err := c.lr.dns.Set(dnsName(c.lr.s), addrs, time.Second); err != nil {
		return err
	}
	c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: eps})
	c.cc.Connect()
	return nil
}

// serviceConfig is the channel's service config for a policy and its JSON
// config: for the reference, the policy wrapped in the recorder, with the
// run's sink and seed; and the client's healthCheckConfig, if it has one
// (grpc-go checks health when the service config asks for it and its
// health package is linked in, as this file does).
func (c *inProcess) serviceConfig(policy, config string) string {
	lb := fmt.Sprintf(`[{%q:%s}]`, policy, config)
	if c.recorded {
		lb = fmt.Sprintf(`[{%q:{"sink":%q,"seed":%d,"child":[{%q:%s}]}}]`, recorder.Name, c.sink, c.seed, policy, config)
	}
	if !c.health.on {
		return fmt.Sprintf(`{"loadBalancingConfig":%s}`, lb)
	}
	return fmt.Sprintf(`{"loadBalancingConfig":%s,"healthCheckConfig":{"serviceName":%q}}`, lb, c.health.service)
}

// timedSink stamps recorder events on the lab's timebase, and hands the
// root policy's re-resolution requests to resolveNow.
type timedSink struct {
	log        *eventLog
	lab        *netlab.Lab
	resolveNow func()
}

func (t timedSink) Now() time.Duration { return t.lab.Now() }

// Record keeps the recorder's policy events; the stimuli it also records
// (resolver updates) are the harness's own, recorded once, by the runner.
func (t timedSink) Record(e trace.Event) {
	if e.Source != trace.SourceHarness {
		t.log.Add(e)
	}
	if e.Kind == trace.KindResolveNow && e.Source == trace.SourcePolicy && e.Policy == "" && t.resolveNow != nil {
		t.resolveNow()
	}
}

func (c *inProcess) watchStates() {
	defer c.wg.Done()
	for s := c.cc.GetState(); ; s = c.cc.GetState() {
		c.lr.record(trace.Event{Source: trace.SourceDriver, Kind: trace.KindChannelState, State: s.String()})
		c.states.record(s)
		if s == connectivity.Shutdown || !c.cc.WaitForStateChange(context.Background(), s) {
			return
		}
	}
}

// stateCatchUp bounds how long close waits for the channel-state watcher
// to record the channel's last state before closing it.
const stateCatchUp = time.Second

// catchUp lets the channel take the state its root policy reported last
// (the recorder records a report before the channel acts on it, so a step
// on the report can close the channel before it changed) and the watcher
// record it, for at most stateCatchUp: a run that finishes on the policy's
// READY shows the channel READY too.
func (c *inProcess) catchUp() {
	ctx, cancel := context.WithTimeout(context.Background(), stateCatchUp)
	defer cancel()
	if want := c.rootState(); want != "" {
		for s := c.cc.GetState(); s.String() != want; s = c.cc.GetState() {
			if !c.cc.WaitForStateChange(ctx, s) {
				break
			}
		}
	}
	c.states.await(c.cc.GetState(), stateCatchUp)
}

// rootState is the state the root policy reported last, "" if none (or
// the policy's events are not recorded).
func (c *inProcess) rootState() string {
	if !c.recorded {
		return ""
	}
	evs := c.lr.log.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.Kind == trace.KindBalancerState && e.Source == trace.SourcePolicy && e.Policy == "" {
			return e.State
		}
	}
	return ""
}

func (c *inProcess) close() error {
	c.mu.Lock()
	for _, cancel := range c.rpcs {
		cancel()
	}
	c.mu.Unlock()
	c.catchUp()
	c.cc.Close() // ends the watcher after it records SHUTDOWN, and the xDS resolver
	c.wg.Wait()
	if c.unreg != nil {
		c.unreg()
	}
	return nil
}

// substitute: the reference's trace has its policy's events; grpc-go's own
// policies show the channel's state only.
func (c *inProcess) substitute(kind string) string {
	if !c.recorded && kind == string(trace.KindBalancerState) {
		return string(trace.KindChannelState)
	}
	return kind
}

func (c *inProcess) describe(h *trace.Header) {
	if h.Env == nil {
		h.Env = map[string]string{}
	}
	h.Env[trace.EnvStallWatch] = trace.StallWatchClient
}

// setConfig gives the channel a new service config, as a resolver does:
// the new policy config (wrapped in the recorder for the reference, as
// start wrapped the first), parsed by the channel and pushed with the last
// resolver state. Later resolver updates carry it too, as a real
// resolver's would.
func (c *inProcess) setConfig(a scenario.SetConfig) error {
	if c.res == nil && c.lr.s.Client.Target == scenario.TargetDNS {
		return fmt.Errorf("a client resolving through DNS keeps its default service config: a config step has no resolver to push it")
	}
	if c.res == nil {
		return fmt.Errorf("an xDS client's LB config comes from its resources, not from a config step")
	}
	policy, config, err := c.stepPolicy(a)
	if err != nil {
		return err
	}
	// The step's service config replaces the client's, health checking
	// included.
	step := scenario.Client{LBPolicy: a.LBPolicy, LBConfig: a.LBConfig, ServiceConfig: a.ServiceConfig}
	service, on, err := scenario.HealthCheckService(step.EffectiveServiceConfig())
	if err != nil {
		return err
	}
	c.health = healthCheck{service, on}
	pr := c.res.CC().ParseServiceConfig(c.serviceConfig(policy, config))
	if pr.Err != nil {
		return fmt.Errorf("service config: %w", pr.Err)
	}
	c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindConfigUpdate, Detail: config})
	c.sc = pr
	st := c.last
	st.ServiceConfig = c.sc
	c.res.UpdateState(st)
	return nil
}

// stepPolicy is a config step's policy and config, in the names the
// client's policies are registered under.
func (c *inProcess) stepPolicy(a scenario.SetConfig) (policy, config string, err error) {
	if c.recorded {
		return stepPolicy(a, c.switches)
	}
	return linkedPolicy(scenario.Client{LBPolicy: a.LBPolicy, LBConfig: a.LBConfig, ServiceConfig: a.ServiceConfig}, c.mapped)
}

func (c *inProcess) resolve(a scenario.ResolverUpdate) error {
	if c.lr.s.Client.Target == scenario.TargetDNS {
		return c.resolveDNS(a)
	}
	state := resolverState
	if !c.recorded {
		state = linkedResolverState
	}
	st, eps, err := state(c.lr.s, a)
	if err != nil {
		return err
	}
	if c.dns != nil {
		c.dns.update(eps) // the xDS client's DNS, not the channel's resolver
		return nil
	}
	c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: eps})
	c.last = st
	st.ServiceConfig = c.sc
	c.res.UpdateState(st)
	return nil
}

// startRPC sends one RPC on its own goroutine and records its result (the
// backend that answered, or the status code).
func (c *inProcess) startRPC(a scenario.StartRPC) error {
	ctx, cancel := context.WithCancel(context.Background())
	if a.Deadline > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), a.Deadline)
	}
	c.mu.Lock()
	c.rpcs[a.ID] = cancel
	c.mu.Unlock()
	if len(a.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(a.Metadata))
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		backend, err := netlab.CallName(ctx, c.cc, grpc.WaitForReady(a.WaitForReady))
		e := trace.Event{Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: a.ID, Code: trace.CodeName(codes.OK), Backend: backend}
		if err != nil {
			st, _ := status.FromError(err)
			e.Code, e.Err, e.Backend = trace.CodeName(st.Code()), st.Message(), ""
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				e.Code = trace.CodeName(codes.DeadlineExceeded)
			}
		}
		c.lr.record(e)
	}()
	return nil
}
