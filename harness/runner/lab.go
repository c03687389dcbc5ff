package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"

	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/netlab/xdsserver"
	"github.com/conformlab/conform/reference"
)

// Lab runs s against the reference in a network lab of its own, on wall
// time: real backends and faults, packets captured in the client namespace,
// and a real grpc-go channel whose policy is wrapped in the recorder, so the
// trace has the same LB-level events as a simulated one plus the network's.
// It needs root (see netlab.Available).
func Lab(ctx context.Context, s *scenario.Scenario, opts Options) (*trace.Trace, error) {
	xds := s.Client.Target == scenario.TargetXDS
	var policy, config string
	env, err := referenceEnvOf(s.Client.Env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if !xds { // an xDS client's policy is the resolver's tree
		if policy, config, err = referencePolicy(s.Client, env); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	lw := &labWorld{s: s, env: env, rpcs: map[string]context.CancelFunc{}, states: newStateLog()}
	lw.log = NewEventLog(func() time.Duration { return lw.lab.Now() })
	cfg := netlab.Config{Capture: true, OnEvent: func(e netlab.Event) { lw.log.Add(fromLab(e)) }}
	for _, b := range s.Backends {
		cfg.Backends = append(cfg.Backends, netlab.BackendConfig{Name: b.Name, Families: labFamilies[b.Stack]})
	}
	if lw.lab, err = netlab.Start(ctx, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer lw.lab.Close()
	if xds {
		if err := lw.startXDS(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		defer lw.xds.Close() // before the lab's: it leaves the namespace as it found it
		err = lw.connectXDS(opts.Seed)
	} else {
		err = lw.connect(policy, config, opts.Seed)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	tl, err := newTimeline(s, AddrOf, lw)
	if err != nil {
		lw.close()
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	lw.log.Start()
	runErr := tl.run(ctx)
	lw.close()
	lw.lab.Close() // settles the capture before the events are read
	t := &trace.Trace{Header: trace.NewHeader(s, reference.Impl, trace.ModeLab, opts.Seed), Events: lw.log.Sorted()}
	if runErr != nil {
		return t, fmt.Errorf("%s (lab): %w", s.Name, runErr)
	}
	return t, nil
}

var labFamilies = map[scenario.Stack]netlab.Families{
	scenario.Dual: netlab.Dual, scenario.V4Only: netlab.IPv4Only, scenario.V6Only: netlab.IPv6Only,
}

// labWorld adapts a lab and a grpc-go channel to the timeline.
type labWorld struct {
	s     *scenario.Scenario
	env   referenceEnv // the reference's options from the scenario's environment
	lab   *netlab.Lab
	log   *EventLog // on the lab's clock
	res   *manual.Resolver
	cc    *grpc.ClientConn
	unreg func()

	// What a config step needs to wrap a new policy config as connect
	// wrapped the first, and to push it with the last resolver state.
	sink string
	seed uint64
	last resolver.State             // the last resolver update pushed
	sc   *serviceconfig.ParseResult // the config steps' service config; nil: the default one

	wg     sync.WaitGroup // the state watcher and the RPCs
	states *stateLog      // what the state watcher has recorded
	mu     sync.Mutex
	rpcs   map[string]context.CancelFunc

	// With scenario.TargetXDS (res is then nil): the management server,
	// the xds steps applied so far, and the LOGICAL_DNS answers.
	xds  *xdsserver.Server
	xdsN int
	dns  *xdsDNS
}

// sinkSeq makes each lab run's recorder sink name unique in the process.
var sinkSeq struct {
	sync.Mutex
	n int
}

// connect builds the channel: a manual resolver, the lab's dialer, and the
// reference policy wrapped in the recorder, whose events share the lab's
// timebase.
func (lw *labWorld) connect(policy, config string, seed uint64) error {
	sinkSeq.Lock()
	sinkSeq.n++
	lw.sink, lw.seed = fmt.Sprintf("runner-lab-%d", sinkSeq.n), seed
	sinkSeq.Unlock()
	lw.unreg = recorder.RegisterSink(lw.sink, timedSink{lw.log, lw.lab})
	lw.res = manual.NewBuilderWithScheme("conform")
	sc := lw.serviceConfig(policy, config)
	cc, err := grpc.NewClient("conform:///"+lw.s.Name,
		grpc.WithResolvers(lw.res),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(lw.lab.GRPCDialer()),
		grpc.WithDefaultServiceConfig(sc))
	if err != nil {
		lw.unreg()
		return err
	}
	lw.cc = cc
	cc.Connect() // builds the resolver, so that updates can be pushed
	lw.wg.Add(1)
	go lw.watchStates()
	return nil
}

// serviceConfig is the channel's service config for the reference policy
// and its JSON config: the policy wrapped in the recorder, with the run's
// sink and seed.
func (lw *labWorld) serviceConfig(policy, config string) string {
	return fmt.Sprintf(`{"loadBalancingConfig":[{%q:{"sink":%q,"seed":%d,"child":[{%q:%s}]}}]}`, recorder.Name, lw.sink, lw.seed, policy, config)
}

// timedSink stamps recorder events on the lab's timebase.
type timedSink struct {
	log *EventLog
	lab *netlab.Lab
}

func (t timedSink) Now() time.Duration { return t.lab.Now() }

// Record keeps the recorder's policy events; the stimuli it also records
// (resolver updates) are the harness's own, recorded once, by the runner.
func (t timedSink) Record(e trace.Event) {
	if e.Source != trace.SourceHarness {
		t.log.Add(e)
	}
}

func (lw *labWorld) watchStates() {
	defer lw.wg.Done()
	for s := lw.cc.GetState(); ; s = lw.cc.GetState() {
		lw.log.Add(trace.Event{T: lw.lab.Now(), Source: trace.SourceDriver, Kind: trace.KindChannelState, State: s.String()})
		lw.states.record(s)
		if s == connectivity.Shutdown || !lw.cc.WaitForStateChange(context.Background(), s) {
			return
		}
	}
}

// stateCatchUp bounds how long close waits for the channel-state watcher
// to record the channel's last state before closing it.
const stateCatchUp = time.Second

func (lw *labWorld) close() {
	lw.mu.Lock()
	for _, cancel := range lw.rpcs {
		cancel()
	}
	lw.mu.Unlock()
	lw.states.await(lw.cc.GetState(), stateCatchUp)
	lw.cc.Close() // ends the watcher after it records SHUTDOWN, and the xDS resolver
	lw.wg.Wait()
	lw.unreg()
	if lw.xds != nil {
		lw.xds.Close()
	}
}

func (lw *labWorld) now() time.Duration    { return lw.log.Now() }
func (lw *labWorld) events() []trace.Event { return lw.log.Events() }
func (lw *labWorld) advance(ctx context.Context, cond func() bool, until time.Duration) error {
	return lw.log.Advance(ctx, cond, until)
}

var labFaults = map[scenario.FaultType]netlab.Fault{
	"": netlab.FaultNone, scenario.Drop: netlab.FaultDrop, scenario.Reset: netlab.FaultReset,
	scenario.Stall: netlab.FaultStall, scenario.Down: netlab.FaultDown,
}

func (lw *labWorld) apply(a scenario.Action) error {
	switch a := a.(type) {
	case scenario.ResolverUpdate:
		return lw.resolve(a)
	case scenario.SetFault:
		return lw.setFault(a.Addr, a.Fault)
	case scenario.ClearFault:
		return lw.setFault(a.Addr, "")
	case scenario.BackendDown:
		return lw.lab.SetBackendDown(a.Backend, true)
	case scenario.BackendUp:
		return lw.lab.SetBackendDown(a.Backend, false)
	case scenario.StartRPC:
		lw.startRPC(a)
		return nil
	case scenario.SetConfig:
		if lw.res == nil {
			return fmt.Errorf("an xDS client's LB config comes from its resources, not from a config step")
		}
		return lw.setConfig(a)
	case scenario.XDSResources:
		return lw.setXDS(a)
	}
	return fmt.Errorf("the lab cannot apply %s", a.Kind())
}

// setConfig gives the channel a new service config, as a resolver does:
// the new policy config wrapped in the recorder as connect wraps the first,
// parsed by the channel and pushed with the last resolver state. The
// channel hands it to the recorder, which keeps its child when the policy
// is the same and gives it the new config. Later resolver updates carry it
// too, as a real resolver's would.
func (lw *labWorld) setConfig(a scenario.SetConfig) error {
	policy, config, err := stepPolicy(a, lw.env)
	if err != nil {
		return err
	}
	pr := lw.res.CC().ParseServiceConfig(lw.serviceConfig(policy, config))
	if pr.Err != nil {
		return fmt.Errorf("service config: %w", pr.Err)
	}
	lw.log.Add(trace.Event{T: lw.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindConfigUpdate, Detail: config})
	lw.sc = pr
	st := lw.last
	st.ServiceConfig = lw.sc
	lw.res.UpdateState(st)
	return nil
}

func (lw *labWorld) resolve(a scenario.ResolverUpdate) error {
	st, eps, err := resolverState(lw.s, a)
	if err != nil {
		return err
	}
	if lw.dns != nil {
		lw.dns.update(eps) // the xDS client's DNS, not the channel's resolver
		return nil
	}
	lw.log.Add(trace.Event{T: lw.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: eps})
	lw.last = st
	st.ServiceConfig = lw.sc
	lw.res.UpdateState(st)
	return nil
}

func (lw *labWorld) setFault(a scenario.Addr, f scenario.FaultType) error {
	addr, err := lw.s.Concrete(a, AddrOf)
	if err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	return lw.lab.SetFault(ap, labFaults[f]) // the lab records fault-set / fault-clear
}

// startRPC sends one RPC on its own goroutine and records its start and its
// result (the backend that answered, or the status code).
func (lw *labWorld) startRPC(a scenario.StartRPC) {
	ctx, cancel := context.WithCancel(context.Background())
	if a.Deadline > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), a.Deadline)
	}
	lw.mu.Lock()
	lw.rpcs[a.ID] = cancel
	lw.mu.Unlock()
	if len(a.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(a.Metadata))
	}
	lw.log.Add(trace.Event{T: lw.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindRPCStart, RPC: a.ID,
		Method: netlab.NameMethod, WaitForReady: a.WaitForReady, Duration: a.Deadline})
	lw.wg.Add(1)
	go func() {
		defer lw.wg.Done()
		defer cancel()
		backend, err := netlab.CallName(ctx, lw.cc, grpc.WaitForReady(a.WaitForReady))
		e := trace.Event{Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: a.ID, Code: trace.CodeName(codes.OK), Backend: backend}
		if err != nil {
			st, _ := status.FromError(err)
			e.Code, e.Err, e.Backend = trace.CodeName(st.Code()), st.Message(), ""
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				e.Code = trace.CodeName(codes.DeadlineExceeded)
			}
		}
		e.T = lw.lab.Now()
		lw.log.Add(e)
	}()
}

var labSources = map[netlab.EventKind]trace.Source{
	netlab.EventSYN: trace.SourceCapture, netlab.EventSYNACK: trace.SourceCapture, netlab.EventRST: trace.SourceCapture,
	netlab.EventAccept: trace.SourceBackend, netlab.EventPreface: trace.SourceBackend, netlab.EventRPC: trace.SourceBackend,
}

// fromLab turns a lab event into a trace event.
func fromLab(e netlab.Event) trace.Event {
	src, ok := labSources[e.Kind]
	if !ok {
		src = trace.SourceHarness
	}
	te := trace.Event{T: e.T, Source: src, Kind: trace.Kind(e.Kind), Backend: e.Backend, Method: e.Method, Retransmit: e.Retransmit}
	if e.Addr.IsValid() {
		te.Addr = e.Addr.String()
	}
	if e.Peer.IsValid() {
		te.Peer = e.Peer.String()
		if src == trace.SourceCapture {
			te.Port = int(e.Peer.Port())
		}
	}
	if e.Kind == netlab.EventFaultSet {
		te.Fault = e.Fault.String()
	}
	return te
}
