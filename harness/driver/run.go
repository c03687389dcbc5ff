package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/xdsres"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/netlab/dns"
	"github.com/conformlab/conform/netlab/xdsserver"
	"github.com/conformlab/conform/reference"
	"github.com/conformlab/conform/reference/overridehost"
)

// Options configure RunLab.
type Options struct {
	// Seed is recorded in the header (drivers' randomness is their own).
	Seed uint64
	// Cache is where drivers are built and installed. Default: CacheDir().
	Cache string
	// Source is conform's source tree, for the reference driver. Default:
	// found from the working directory upwards.
	Source string
	// CommandTimeout bounds the wait for each command's reply. Default 10 s.
	CommandTimeout time.Duration
	// Logger receives progress. Default: discard.
	Logger *slog.Logger
}

// NotApplicable is the error of a run whose scenario needs something the
// implementation's driver cannot express.
type NotApplicable struct {
	Reason string
}

func (e *NotApplicable) Error() string { return "not applicable: " + e.Reason }

// NotApplicable is the reason, for suites/spec's verdicts.
func (e *NotApplicable) NotApplicable() string { return e.Reason }

// RunLab runs s against impl in a lab of its own: impl's driver is
// installed, started in the client namespace and given the scenario's
// resolver updates and RPCs, while the lab applies its faults and records
// the network's events. The trace's header names impl and its version as
// the driver reported them, and its Env carries the driver's capabilities.
// A scenario the driver cannot express fails with *NotApplicable.
//
// An xds scenario (target xds) runs against the lab's xDS management server
// (netlab/xdsserver) in the client namespace: the driver gets the server's
// bootstrap in its environment and a channel to "xds:///" + the listener,
// the xds steps set the server's resources, and every DiscoveryRequest the
// server receives is an xds-request event, so a client's ACKs and NACKs are
// recorded whatever its language.
func RunLab(ctx context.Context, s *scenario.Scenario, impl Impl, opts Options) (*trace.Trace, error) {
	if s.Client.Target == scenario.TargetDNS {
		return nil, fmt.Errorf("%s: dns targets need the lab's DNS, which driver runs do not set up yet", s.Name)
	}
	if impl.Name == Reference {
		if err := runner.CheckReferenceEnv(s.Client.Env); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	cmd, err := installFor(ctx, impl, &opts, s.Client.Target == scenario.TargetXDS)
	if err != nil {
		return nil, err
	}
	lr := &labRun{s: s}
	lr.EventLog = runner.NewEventLog(func() time.Duration { return lr.lab.Now() })
	cfg := netlab.Config{Capture: true, Backends: runner.LabBackends(s), OnEvent: func(e netlab.Event) { lr.Add(runner.LabEvent(e)) }}
	if lr.lab, err = netlab.Start(ctx, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer lr.lab.Close()
	tr, err := lr.run(ctx, cmd, opts)
	if err != nil {
		return tr, fmt.Errorf("%s (lab, %s): %w", s.Name, impl, err)
	}
	return tr, nil
}

// installFor fills opts' defaults and installs impl's driver (its xDS
// variant if xds).
func installFor(ctx context.Context, impl Impl, opts *Options, xds bool) (Command, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Cache == "" {
		c, err := CacheDir()
		if err != nil {
			return Command{}, err
		}
		opts.Cache = c
	}
	if opts.Source == "" && impl.Name == Reference {
		opts.Source = FindSource()
	}
	return Install(ctx, impl, InstallEnv{Cache: opts.Cache, Source: opts.Source, Logger: opts.Logger, XDS: xds})
}

// FindSource is conform's source tree if the working directory is inside
// it, else "".
func FindSource() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for ; ; dir = filepath.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module "+conformModule+"\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// labRun is one scenario run through a driver: the runner's World.
type labRun struct {
	s   *scenario.Scenario
	lab *netlab.Lab
	drv *Process
	sc  string // the service config sent with create

	// With a driver that cannot host the conform resolver, the lab DNS
	// serves the scenario's addresses; the channel is created when the first
	// resolver update is due.
	dns     *dns.Server
	created bool
	// policyEvents says the driver sends its policy's events; without them,
	// the channel's state stands in for the root policy's (Substitute).
	policyEvents bool

	// With an xds target: the lab's management server, and how many xds
	// steps were applied (their default versions are "1", "2", …).
	xds      *xdsserver.Server
	xdsSteps int

	// The run's events, on the lab's clock: the World's Now, Events and
	// Advance.
	*runner.EventLog
}

var _ runner.World = (*labRun)(nil)

// run starts the driver, checks it can express the scenario, creates the
// channel and carries out the timeline; the driver is always stopped.
func (lr *labRun) run(ctx context.Context, cmd Command, opts Options) (*trace.Trace, error) {
	cmd.Env = slices.Clone(cmd.Env)
	if lr.s.Client.Target == scenario.TargetXDS {
		cmd.Env = append(cmd.Env, xdsEnv()...)
	}
	// The scenario's gRPC switches are the driver's environment: the
	// implementation reads them itself, as it would in production.
	cmd.Env = append(cmd.Env, scenario.EnvList(lr.s.Client.Env)...)
	popts := ProcessOptions{Now: lr.lab.Now, Record: lr.Add, CommandTimeout: opts.CommandTimeout}
	if lr.s.Client.Target == scenario.TargetXDS && resolverUpdates(lr.s) > 0 {
		// LOGICAL_DNS clusters: the implementation's xDS client asks its
		// system resolver, which is made the lab's DNS, serving the
		// scenario's resolve steps under the clusters' names.
		dir, err := os.MkdirTemp("", "conform-resolver-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := dns.WriteResolverFiles(dir); err != nil {
			return nil, err
		}
		if err := lr.startDNS(); err != nil {
			return nil, err
		}
		popts.LabResolverDir = dir
	}
	drv, err := Start(lr.lab, cmd, popts)
	if err != nil {
		if lr.dns != nil {
			err = errors.Join(err, lr.dns.Close())
		}
		return nil, err
	}
	lr.drv = drv
	hello := drv.Hello()
	lr.policyEvents = hello.Impl == Reference // the reference's driver sends its policy's events
	if missing := lr.missingCapabilities(hello); missing != "" {
		drv.Kill()
		if lr.dns != nil {
			lr.dns.Close()
		}
		return nil, &NotApplicable{Reason: fmt.Sprintf("%s %s cannot express %s", hello.Impl, hello.Version, missing)}
	}
	lr.sc = serviceConfig(lr.s.Client)
	var runErr error
	switch {
	case lr.s.Client.Target == scenario.TargetXDS:
		if runErr = lr.startXDS(); runErr == nil {
			runErr = drv.Create("xds:///"+lr.s.Client.Listener, "")
			lr.created = true
		}
	case usesDNS(hello):
		runErr = lr.startDNS()
	default:
		runErr = drv.Create("conform:///"+lr.s.Name, lr.sc)
		lr.created = true
	}
	if runErr == nil {
		lr.Start()
		runErr = runner.RunWorld(ctx, lr.s, lr)
	}
	runErr = errors.Join(runErr, drv.Close())
	if lr.dns != nil {
		runErr = errors.Join(runErr, lr.dns.Close())
	}
	if lr.xds != nil {
		runErr = errors.Join(runErr, lr.xds.Close())
	}
	lr.lab.Close() // settles the capture before the events are read
	return &trace.Trace{Header: header(lr.s, hello, opts.Seed), Events: lr.Sorted()}, runErr
}

// header is the run's trace header: the implementation as the driver named
// it, and the driver's capabilities in Env.
func header(s *scenario.Scenario, h Hello, seed uint64) trace.Header {
	hd := trace.NewHeader(s, h.Impl, trace.ModeLab, seed)
	hd.ImplVersion = h.Version
	hd.Env = map[string]string{"driver.protocol": strconv.Itoa(h.Protocol), "driver.observes": h.Observes}
	var can, cannot []string
	for k, v := range h.Can {
		if v {
			can = append(can, k)
		} else {
			cannot = append(cannot, k)
		}
	}
	sort.Strings(can)
	sort.Strings(cannot)
	hd.Env["driver.can"], hd.Env["driver.cannot"] = strings.Join(can, ","), strings.Join(cannot, ",")
	return hd
}

// serviceConfig is the client's configuration as a service config, in
// standard policy names; "" leaves the implementation's default.
func serviceConfig(c scenario.Client) string {
	if c.ServiceConfig != "" {
		return c.ServiceConfig
	}
	if c.LBPolicy == "" {
		return ""
	}
	cfg := c.LBConfig
	if cfg == "" {
		cfg = "{}"
	}
	return fmt.Sprintf(`{"loadBalancingConfig":[{%q:%s}]}`, c.LBPolicy, cfg)
}

// missingCapabilities names what s needs that h cannot do, or "".
func (lr *labRun) missingCapabilities(h Hello) string {
	var missing []string
	for _, need := range needs(lr.s) {
		if !h.Can[need] {
			missing = append(missing, need)
		}
	}
	for _, p := range policiesUsed(lr.s.Client) {
		if h.Policies != nil && !slices.Contains(h.Policies, p) {
			missing = append(missing, "the LB policy "+p)
		}
	}
	if usesDNS(h) && lr.s.Client.Target != scenario.TargetXDS && resolverUpdates(lr.s) > 1 {
		missing = append(missing, "a second resolver update (its only resolver is DNS, re-queried on its own schedule)")
	}
	if changesConfig(lr.s) {
		missing = append(missing, "a config step (the driver protocol has no command to change the LB config during a run)")
	}
	return strings.Join(missing, ", ")
}

// changesConfig reports whether s has a config step.
func changesConfig(s *scenario.Scenario) bool {
	for _, st := range s.Steps {
		if _, ok := st.Action.(scenario.SetConfig); ok {
			return true
		}
	}
	return false
}

// policiesUsed lists the standard LB policy names the client's config uses,
// at any depth (a priority's children, say).
func policiesUsed(c scenario.Client) []string {
	var out []string
	if c.LBPolicy != "" {
		out = append(out, c.LBPolicy)
	}
	cfg := c.LBConfig + c.ServiceConfig
	for _, name := range reference.StandardNames() {
		if strings.Contains(cfg, strconv.Quote(name)+":") && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// usesDNS reports whether the driver said it cannot host the conform
// resolver, so that its addresses come from the lab DNS.
func usesDNS(h Hello) bool {
	can, said := h.Can[CanResolver]
	return said && !can
}

func resolverUpdates(s *scenario.Scenario) int {
	n := 0
	for _, st := range s.Steps {
		if _, ok := st.Action.(scenario.ResolverUpdate); ok {
			n++
		}
	}
	return n
}

// xdsNode is the node id in the bootstrap conform gives drivers.
const xdsNode = "conform-client0"

// xdsEnv is a driver's environment for an xds target: the lab server's
// bootstrap, inline (gRFC A27's GRPC_XDS_BOOTSTRAP_CONFIG, which grpc-go,
// grpc-js and C-core read). GRPC_XDS_BOOTSTRAP, a file that would take
// precedence, is never passed on (driverEnviron).
func xdsEnv() []string {
	return []string{"GRPC_XDS_BOOTSTRAP_CONFIG=" + string(xdsserver.Bootstrap(xdsNode))}
}

// startXDS starts the lab's management server in the client namespace; the
// requests it receives become xds-request events. It answers nothing until
// the first xds step.
func (lr *labRun) startXDS() error {
	srv, err := xdsserver.Start(lr.lab, "client0", xdsserver.WithClock(lr.lab.Now), xdsserver.WithEventHook(func(e xdsserver.Event) {
		if ev, ok := xdsres.TraceEvent(e); ok {
			lr.Add(ev)
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
func (lr *labRun) setXDS(x scenario.XDSResources) error {
	if lr.xds == nil {
		return errors.New("an xds step without the xds target")
	}
	lr.xdsSteps++
	version := xdsres.Version(x, lr.xdsSteps)
	res, err := xdsres.Build(lr.s, x, xdsres.Options{AddrOf: runner.AddrOf, Port: lr.lab.Port()})
	if err != nil {
		return err
	}
	lr.Add(trace.Event{T: lr.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindNote,
		Detail: fmt.Sprintf("xds step: version %s: %s", version, xdsSummary(x))})
	return lr.xds.SetResources(version, res)
}

// xdsSummary names an xds step's resources per type: "LDS [l] RDS [r] CDS
// [c] EDS [c]".
func xdsSummary(x scenario.XDSResources) string {
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

// dnsName is the name the lab DNS serves a scenario's addresses under.
func dnsName(s *scenario.Scenario) string { return strings.ToLower(s.Name) + ".conform" }

// startDNS serves the lab DNS in the client namespace; its queries become
// dns-query events.
func (lr *labRun) startDNS() error {
	lr.dns = dns.New(dns.WithClock(lr.lab.Now), dns.WithOnQuery(func(q dns.Query) {
		lr.Add(trace.Event{T: q.T, Source: trace.SourceHarness, Kind: trace.KindDNSQuery, Peer: q.From.String(),
			Detail: fmt.Sprintf("%s %s %s", q.Type, q.Name, q.RCode)})
	}))
	_, err := lr.dns.ListenIn(lr.lab, "client0")
	return err
}

// resolveDNS serves a resolver update from the lab DNS (flattened: DNS has
// no endpoints) and creates the channel with the first one.
func (lr *labRun) resolveDNS(eps [][]string) error {
	var addrs []netip.Addr
	for _, ep := range eps {
		for _, a := range ep {
			ap, err := netip.ParseAddrPort(a)
			if err != nil {
				return err
			}
			if !slices.Contains(addrs, ap.Addr()) {
				addrs = append(addrs, ap.Addr())
			}
		}
	}
	for _, name := range lr.dnsNames() {
		if err := lr.dns.Set(name, addrs, time.Second); err != nil {
			return err
		}
	}
	if lr.created {
		return nil
	}
	lr.created = true
	return lr.drv.Create(dns.Target(dnsName(lr.s), netlab.DefaultPort), lr.sc)
}

// dnsNames are the names the lab DNS serves the resolve steps under: the
// scenario's own name for a driver resolving through DNS, or, with an xds
// target, every LOGICAL_DNS cluster's name (each resolves to the last
// resolve step's addresses, as in the reference's runs).
func (lr *labRun) dnsNames() []string {
	if lr.s.Client.Target != scenario.TargetXDS {
		return []string{dnsName(lr.s)}
	}
	var names []string
	for _, st := range lr.s.Steps {
		x, ok := st.Action.(scenario.XDSResources)
		if !ok {
			continue
		}
		for _, c := range x.Clusters {
			if c.Type == scenario.ClusterLogicalDNS && !slices.Contains(names, c.DNSHost) {
				names = append(names, c.DNSHost)
			}
		}
	}
	return names
}

// needs lists the capabilities s needs, in a fixed order.
func needs(s *scenario.Scenario) []string {
	set := map[string]bool{}
	if s.Client.Target == scenario.TargetXDS {
		set[CanXDS] = true
	}
	if s.Client.LBPolicy != "" || s.Client.ServiceConfig != "" {
		set[CanServiceConfig] = true
	}
	cfg := strings.ReplaceAll(s.Client.LBConfig+s.Client.ServiceConfig, " ", "")
	if strings.Contains(cfg, `"shuffleAddressList":true`) {
		set[CanShuffle] = true
	}
	if strings.Contains(cfg, `"connectionAttemptDelay"`) {
		set[CanAttemptDelay] = true
	}
	for _, st := range s.Steps {
		switch a := st.Action.(type) {
		case scenario.ResolverUpdate:
			updateNeeds(s, a, set)
			if endpointAttrs(a) != nil {
				set[CanEndpointAttributes] = true
			}
			if flattensEndpoints(s.Client) {
				delete(set, CanEndpoints)
			}
		case scenario.StartRPC:
			if a.WaitForReady {
				set[CanWaitForReady] = true
			}
			if _, ok := a.Metadata[overridehost.SessionHeader]; ok {
				set[CanSessionMetadata] = true
			}
		}
	}
	var out []string
	for _, c := range []string{CanEndpoints, CanEndpointAttributes, CanMixedFamilies, CanServiceConfig, CanShuffle, CanAttemptDelay, CanSessionMetadata, CanWaitForReady, CanXDS} {
		if set[c] {
			out = append(out, c)
		}
	}
	return out
}

// endpointAttrs are an update's endpoint attributes, one map per endpoint,
// or nil when no endpoint has any.
func endpointAttrs(a scenario.ResolverUpdate) []map[string]string {
	var out []map[string]string
	any := false
	for _, ep := range a.Endpoints {
		out = append(out, ep.Attrs)
		any = any || len(ep.Attrs) > 0
	}
	if !any {
		return nil
	}
	return out
}

// flattensEndpoints reports whether the client's policy is pick_first (the
// default), which flattens the endpoint list into one address list (A61,
// "Address List Handling in pick_first"): for it, a driver without
// endpoints expresses the scenario exactly by sending the flattened list.
func flattensEndpoints(c scenario.Client) bool {
	return c.ServiceConfig == "" && (c.LBPolicy == "" || c.LBPolicy == "pick_first")
}

// updateNeeds adds what one resolver update needs: endpoints with several
// addresses, and both families in one update.
func updateNeeds(s *scenario.Scenario, a scenario.ResolverUpdate, set map[string]bool) {
	eps, err := s.ConcreteEndpoints(a.Endpoints, runner.AddrOf)
	if err != nil {
		return // reported when the step is applied
	}
	var v4, v6 bool
	for _, ep := range eps {
		if len(ep) > 1 {
			set[CanEndpoints] = true
		}
		for _, addr := range ep {
			ap, err := netip.ParseAddrPort(addr)
			v6 = v6 || (err == nil && ap.Addr().Is6())
			v4 = v4 || (err == nil && ap.Addr().Is4())
		}
	}
	if v4 && v6 {
		set[CanMixedFamilies] = true
	}
}

// Substitute lets a step that waits on the root policy's state wait on the
// channel's state instead when the implementation does not expose its
// policy's events: both are the state the channel reports.
func (lr *labRun) Substitute(kind string) string {
	if !lr.policyEvents && kind == string(trace.KindBalancerState) {
		return string(trace.KindChannelState)
	}
	return kind
}

// Apply sends resolver updates and RPCs to the driver; the lab carries out
// the rest.
func (lr *labRun) Apply(a scenario.Action) error {
	switch a := a.(type) {
	case scenario.ResolverUpdate:
		eps, err := lr.s.ConcreteEndpoints(a.Endpoints, runner.AddrOf)
		if err != nil {
			return err
		}
		lr.Add(trace.Event{T: lr.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: eps})
		if lr.dns != nil {
			return lr.resolveDNS(eps)
		}
		return lr.drv.Resolve(eps, endpointAttrs(a))
	case scenario.StartRPC:
		lr.Add(trace.Event{T: lr.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindRPCStart, RPC: a.ID,
			Method: netlab.NameMethod, WaitForReady: a.WaitForReady, Duration: a.Deadline})
		return lr.drv.StartRPC(RPC{ID: a.ID, Method: netlab.NameMethod, WaitForReady: a.WaitForReady, Deadline: a.Deadline, Metadata: a.Metadata})
	case scenario.SetFault:
		return lr.setFault(a.Addr, runner.LabFault(a.Fault))
	case scenario.ClearFault:
		return lr.setFault(a.Addr, netlab.FaultNone)
	case scenario.BackendDown:
		return lr.lab.SetBackendDown(a.Backend, true)
	case scenario.BackendUp:
		return lr.lab.SetBackendDown(a.Backend, false)
	case scenario.XDSResources:
		return lr.setXDS(a)
	}
	return fmt.Errorf("a driver run cannot apply %s", a.Kind())
}

func (lr *labRun) setFault(a scenario.Addr, f netlab.Fault) error {
	addr, err := lr.s.Concrete(a, runner.AddrOf)
	if err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	return lr.lab.SetFault(ap, f) // the lab records fault-set / fault-clear
}
