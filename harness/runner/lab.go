package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/xdsres"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/netlab/dns"
	"github.com/conformlab/conform/netlab/xdsserver"
)

// labClient is the implementation's side of a lab run: its channel, in this
// process or in a driver process, which takes the scenario's resolver
// updates, config steps and RPCs. The lab run does the rest (faults,
// backends, the xDS management server's resources) and records the
// stimuli it applies itself.
type labClient interface {
	// start creates the client in lr's lab (the channel may wait for the
	// first resolver update).
	start(ctx context.Context, lr *labRun, seed uint64) error
	// resolve gives the client a resolver update, and records it.
	resolve(u scenario.ResolverUpdate) error
	// startRPC sends one RPC; its start is recorded already.
	startRPC(a scenario.StartRPC) error
	// setConfig gives the channel a new LB config.
	setConfig(a scenario.SetConfig) error
	// substitute names the kind of event that stands in for kind when the
	// client does not show its policy's own events, or kind itself.
	substitute(kind string) string
	// close stops the client; its last events are recorded when it
	// returns.
	close() error
	// describe completes the trace's header with what the client says of
	// itself (its version and capabilities; a client in this process says
	// so: the lab's stall watch shares its process).
	describe(h *trace.Header)
}

// labRun is one scenario run in a lab of its own: the timeline's carrier.
type labRun struct {
	s      *scenario.Scenario
	lab    *netlab.Lab
	log    *eventLog // on the lab's clock
	client labClient
	name   string // the implementation, as the trace names it

	// With an xds target: the lab's management server, and how many xds
	// steps were applied (their default versions are "1", "2", …).
	xds      *xdsserver.Server
	xdsSteps int
	// The lab DNS, when the client resolves names (startDNS).
	dns *dns.Server
	// With WithPCAP: the client's frames, and why they may be incomplete.
	frames    *frameCapture
	framesErr error
}

// runLab runs s against impl in a lab of its own, on wall time: real
// backends and faults, packets captured in the client namespace, the lab's
// services, and impl's client. It needs root (see netlab.Available).
func runLab(ctx context.Context, s *scenario.Scenario, impl Impl, opts Options) (*trace.Trace, error) {
	c, err := impl.labClient(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	lr := &labRun{s: s, client: c, name: impl.String()}
	lr.log = newEventLog(func() time.Duration { return lr.lab.Now() })
	cfg := netlab.Config{Capture: true, WatchStalls: true, Backends: labBackends(s), OnEvent: func(e netlab.Event) { lr.log.Add(fromLab(e)) }}
	if lr.lab, err = netlab.Start(ctx, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer lr.lab.Close()
	dir := pcapDir(ctx)
	if dir != "" {
		if lr.frames, err = startFrames(lr.lab, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		defer lr.frames.abort()
	}
	tr, err := lr.run(ctx, opts.Seed)
	if dir != "" && tr != nil && ctx.Err() == nil { // no file for a run that is not applicable
		err = errors.Join(err, lr.framesErr, lr.frames.write(dir, s, impl.String()))
	}
	if err != nil {
		return tr, fmt.Errorf("%s (lab, %s): %w", s.Name, impl, err)
	}
	return tr, nil
}

// run starts the lab's services and the client, carries out the timeline
// and stops them all. The trace is nil only when the scenario is not
// applicable.
func (lr *labRun) run(ctx context.Context, seed uint64) (*trace.Trace, error) {
	var err error
	if lr.s.Client.Target == scenario.TargetXDS {
		err = lr.startXDS()
	}
	if err == nil {
		err = lr.client.start(ctx, lr, seed)
	}
	if err != nil {
		err = errors.Join(err, lr.closeServices())
		if na := (*NotApplicable)(nil); errors.As(err, &na) {
			return nil, err
		}
		return lr.trace(seed), err
	}
	tl, err := newTimeline(lr.s, AddrOf, lr)
	if err == nil {
		lr.log.Start()
		err = tl.run(ctx)
	}
	err = errors.Join(err, lr.client.close(), lr.closeServices())
	return lr.trace(seed), err
}

// trace closes the lab, which settles the capture, and returns the run's
// trace.
func (lr *labRun) trace(seed uint64) *trace.Trace {
	if lr.frames != nil && lr.framesErr == nil {
		lr.framesErr = lr.frames.stop(lr.lab, lr.s)
	}
	lr.lab.Close()
	h := trace.NewHeader(lr.s, lr.name, trace.ModeLab, seed)
	lr.client.describe(&h)
	if h.Env == nil {
		h.Env = map[string]string{}
	}
	if h.Env[trace.EnvStallWatch] == "" { // a client in a process of its own
		h.Env[trace.EnvStallWatch] = trace.StallWatchHarness
	}
	return &trace.Trace{Header: h, Events: lr.log.Sorted()}
}

// closeServices stops the lab DNS and the management server, if started.
func (lr *labRun) closeServices() error {
	var err error
	if lr.dns != nil {
		err = lr.dns.Close()
		lr.dns = nil
	}
	if lr.xds != nil {
		err = errors.Join(err, lr.xds.Close())
		lr.xds = nil
	}
	return err
}

func (lr *labRun) now() time.Duration            { return lr.log.Now() }
func (lr *labRun) events() []trace.Event         { return lr.log.Events() }
func (lr *labRun) substitute(kind string) string { return lr.client.substitute(kind) }
func (lr *labRun) advance(ctx context.Context, cond func() bool, until time.Duration) error {
	return lr.log.Advance(ctx, cond, until)
}

// record adds an event stamped now.
func (lr *labRun) record(e trace.Event) {
	e.T = lr.lab.Now()
	lr.log.Add(e)
}

func (lr *labRun) apply(a scenario.Action) error {
	switch a := a.(type) {
	case scenario.ResolverUpdate:
		return lr.client.resolve(a)
	case scenario.StartRPC:
		lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindRPCStart, RPC: a.ID,
			Method: netlab.NameMethod, WaitForReady: a.WaitForReady, Duration: a.Deadline})
		return lr.client.startRPC(named(a))
	case scenario.SetConfig:
		return lr.client.setConfig(a)
	case scenario.SetFault:
		return lr.setFault(a)
	case scenario.ClearFault:
		return lr.setFault(scenario.SetFault{Addr: a.Addr})
	case scenario.BackendDown:
		return lr.lab.SetBackendDown(a.Backend, true)
	case scenario.BackendUp:
		return lr.lab.SetBackendDown(a.Backend, false)
	case scenario.SetXDS:
		return lr.setXDS(a.Resources)
	case scenario.SetHealth:
		return lr.setHealth(a)
	}
	return fmt.Errorf("the lab cannot apply %s", a.Kind())
}

// named is RPC a carrying its id in the metadata netlab.RPCHeader, so the
// backend that answers it records which RPC it was (rpc-served's rpc).
func named(a scenario.StartRPC) scenario.StartRPC {
	md := make(map[string]string, len(a.Metadata)+1)
	maps.Copy(md, a.Metadata)
	md[netlab.RPCHeader] = a.ID
	a.Metadata = md
	return a
}

var labFaults = map[scenario.FaultType]netlab.Fault{
	"": netlab.FaultNone, scenario.Drop: netlab.FaultDrop, scenario.Reset: netlab.FaultReset,
	scenario.Stall: netlab.FaultStall, scenario.Down: netlab.FaultDown, scenario.FailRPCs: netlab.FaultFailRPCs,
}

// setFault applies a fault step; one without a fault clears the address.
// The lab records fault-set / fault-clear.
func (lr *labRun) setFault(a scenario.SetFault) error {
	f, ok := labFaults[a.Fault]
	if !ok {
		return fmt.Errorf("the lab cannot apply fault %q", a.Fault)
	}
	addr, err := lr.s.Concrete(a.Addr, AddrOf)
	if err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	if f != netlab.FaultFailRPCs {
		return lr.lab.SetFault(ap, f)
	}
	code, ok := trace.ParseCode(a.FailCode())
	if !ok {
		return fmt.Errorf("fault %s: unknown status code %q", a.Fault, a.FailCode())
	}
	return lr.lab.FailRPCs(ap, code)
}

// setHealth has the address's backend serve the step's status for its
// health service name (the lab records health-set).
func (lr *labRun) setHealth(h scenario.SetHealth) error {
	addr, err := lr.s.Concrete(h.Addr, AddrOf)
	if err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	return lr.lab.SetHealth(ap, h.Service, h.Status == scenario.Serving)
}

// startXDS starts the lab's management server in the client namespace; the
// requests it receives become xds-request events. It answers nothing until
// the first xds step.
func (lr *labRun) startXDS() error {
	srv, err := xdsserver.Start(lr.lab, "client0", xdsserver.WithClock(lr.lab.Now), xdsserver.WithEventHook(func(e xdsserver.Event) {
		if ev, ok := xdsres.TraceEvent(e); ok {
			lr.log.Add(ev)
		}
	}))
	if err != nil {
		return err
	}
	lr.xds = srv
	return nil
}

// setXDS applies an xds step: the management server's new state of the
// world, under the step's version.
func (lr *labRun) setXDS(x xds.Resources) error {
	if lr.xds == nil {
		return fmt.Errorf("an xds step needs client.target %s", scenario.TargetXDS)
	}
	lr.xdsSteps++
	version := xdsres.Version(x, lr.xdsSteps)
	res, err := xdsres.Build(lr.s, x, xdsOptions)
	if err != nil {
		return err
	}
	lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindNote,
		Detail: fmt.Sprintf("xds step: version %s: %s", version, xdsSummary(x))})
	return lr.xds.SetResources(version, res)
}

// xdsSummary names an xds step's resources per type: "LDS [l] RDS [r] CDS
// [c] EDS [c]".
func xdsSummary(x xds.Resources) string {
	var l, r, c, e []string
	for _, v := range x.Listeners {
		l = append(l, v.Name)
	}
	for _, v := range x.RouteConfigs {
		r = append(r, v.Name)
	}
	for _, v := range x.Clusters {
		c = append(c, v.Name)
	}
	for _, v := range x.Endpoints {
		e = append(e, v.Cluster)
	}
	return fmt.Sprintf("LDS %v RDS %v CDS %v EDS %v", l, r, c, e)
}

// startDNS serves the lab DNS in the client namespace; its queries become
// dns-query events.
func (lr *labRun) startDNS() error {
	lr.dns = dns.New(dns.WithClock(lr.lab.Now), dns.WithOnQuery(func(q dns.Query) {
		lr.log.Add(trace.Event{T: q.T, Source: trace.SourceHarness, Kind: trace.KindDNSQuery, Peer: q.From.String(),
			Detail: fmt.Sprintf("%s %s %s", q.Type, q.Name, q.RCode)})
	}))
	_, err := lr.dns.ListenIn(lr.lab, "client0")
	return err
}

var labFamilies = map[scenario.Stack]netlab.Families{
	scenario.Dual: netlab.Dual, scenario.IPv4Only: netlab.IPv4Only, scenario.IPv6Only: netlab.IPv6Only,
}

// labBackends are the lab's backend configs for s's backends.
func labBackends(s *scenario.Scenario) []netlab.BackendConfig {
	var out []netlab.BackendConfig
	for _, b := range s.Backends {
		out = append(out, netlab.BackendConfig{Name: b.Name, Families: labFamilies[b.Stack]})
	}
	return out
}

var labSources = map[netlab.EventKind]trace.Source{
	netlab.EventSYN: trace.SourceCapture, netlab.EventSYNACK: trace.SourceCapture, netlab.EventRST: trace.SourceCapture,
	netlab.EventAccept: trace.SourceBackend, netlab.EventPreface: trace.SourceBackend, netlab.EventRPC: trace.SourceBackend,
	netlab.EventConnClose: trace.SourceBackend, netlab.EventHealthSent: trace.SourceBackend,
}

// fromLab turns a lab event into a trace event.
func fromLab(e netlab.Event) trace.Event {
	src, ok := labSources[e.Kind]
	if !ok {
		src = trace.SourceHarness
	}
	te := trace.Event{T: e.T, Source: src, Kind: trace.Kind(e.Kind), Backend: e.Backend, Method: e.Method, RPC: e.RPC, Retransmit: e.Retransmit}
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
	if e.Kind == netlab.EventStall {
		te.Duration = e.Late
	}
	if e.Kind == netlab.EventHealthSet || e.Kind == netlab.EventHealthSent {
		// As the simulator records it: the state a health watch reports
		// for the status served.
		te.Service, te.State = e.Service, connectivity.TransientFailure.String()
		if e.Serving {
			te.State = connectivity.Ready.String()
		}
	}
	if e.Code != codes.OK {
		te.Code = trace.CodeName(e.Code)
	}
	return te
}
