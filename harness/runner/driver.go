package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/netlab/dns"
	"github.com/conformlab/conform/netlab/xdsserver"
	"github.com/conformlab/conform/reference"
)

// Driver is an implementation in a driver process (harness/driver): its
// driver is installed at first use, started in the lab's client namespace
// and given the scenario's resolver updates and RPCs over the driver
// protocol. It runs in the lab only.
type Driver struct {
	Impl driver.Release
	// Cache is where drivers are built and installed. Default:
	// driver.CacheDir().
	Cache string
	// Source is conform's source tree, for the reference's driver.
	// Default: found from the working directory upwards.
	Source string
	// CommandTimeout bounds the wait for each command's reply. Default 10 s.
	CommandTimeout time.Duration
	// Logger receives progress. Default: discard.
	Logger *slog.Logger
}

func (d Driver) String() string { return d.Impl.String() }

func (d Driver) runSim(_ context.Context, s *scenario.Scenario, _ Options) (*trace.Trace, error) {
	return nil, fmt.Errorf("%s: %w", s.Name, &NotApplicable{Reason: d.Impl.String() +
		" runs in a driver process, and the simulator runs only Go balancers linked into conform"})
}

// labClient checks what can be checked before the lab exists and installs
// the driver (its xDS variant for an xds target).
func (d Driver) labClient(ctx context.Context, s *scenario.Scenario) (labClient, error) {
	if d.Impl.Name == driver.Reference {
		if _, err := reference.ParseSwitches(s.Client.Env); err != nil {
			return nil, err
		}
	}
	env := driver.InstallEnv{Cache: d.Cache, Source: d.Source, Logger: d.Logger, XDS: s.Client.Target == scenario.TargetXDS}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	if env.Cache == "" {
		c, err := driver.CacheDir()
		if err != nil {
			return nil, err
		}
		env.Cache = c
	}
	if env.Source == "" && d.Impl.Name == driver.Reference {
		env.Source = driver.FindSource()
	}
	cmd, err := driver.Install(ctx, d.Impl, env)
	if err != nil {
		return nil, err
	}
	return &driverClient{cmd: cmd, timeout: d.CommandTimeout}, nil
}

// driverClient is a lab client in a driver process.
type driverClient struct {
	cmd     driver.Command
	timeout time.Duration

	lr    *labRun
	drv   *driver.Process
	hello driver.Hello
	sc    string // the service config sent with create
	// resolverDir holds the files that make the lab DNS the driver's
	// system resolver, when it needs one.
	resolverDir string
	// With a driver that cannot host the conform resolver, the lab DNS
	// serves the scenario's addresses; the channel is created when the first
	// resolver update is due.
	created bool
}

// start starts the driver, checks it can express the scenario and creates
// the channel (or, for a driver resolving through DNS, waits for the first
// resolver update).
func (c *driverClient) start(_ context.Context, lr *labRun, _ uint64) error {
	c.lr = lr
	s := lr.s
	cmd := c.cmd
	cmd.Env = slices.Clone(cmd.Env)
	if s.Client.Target == scenario.TargetXDS {
		cmd.Env = append(cmd.Env, xdsEnv()...)
	}
	// The scenario's gRPC switches are the driver's environment: the
	// implementation reads them itself, as it would in production.
	cmd.Env = append(cmd.Env, scenario.EnvList(s.Client.Env)...)
	popts := driver.ProcessOptions{Now: lr.lab.Now, Record: lr.log.Add, CommandTimeout: c.timeout}
	if (s.Client.Target == scenario.TargetXDS && resolverUpdates(s) > 0) || s.Client.Target == scenario.TargetDNS {
		// LOGICAL_DNS clusters: the implementation's xDS client asks its
		// system resolver, which is made the lab's DNS, serving the
		// scenario's resolve steps under the clusters' names. A dns
		// target: the channel's DNS resolver asks it too (grpc-js and
		// C-core read resolv.conf; grpc-go's Go resolver as well).
		if err := c.labResolver(); err != nil {
			return err
		}
		popts.LabResolverDir = c.resolverDir
	}
	drv, err := driver.Start(lr.lab, cmd, popts)
	if err != nil {
		c.removeResolverDir()
		return err
	}
	c.drv, c.hello = drv, drv.Hello()
	if missing := missingCapabilities(s, c.hello); missing != "" {
		drv.Kill()
		c.removeResolverDir()
		return &NotApplicable{Reason: fmt.Sprintf("%s %s cannot express %s", c.hello.Impl, c.hello.Version, missing)}
	}
	c.sc = s.Client.EffectiveServiceConfig()
	switch {
	case s.Client.Target == scenario.TargetXDS:
		c.created = true
		err = drv.Create("xds:///"+s.Client.Listener, "")
	case s.Client.Target == scenario.TargetDNS:
		// created at the resolve step, which sets the records
	case usesDNS(c.hello):
		err = lr.startDNS()
	default:
		c.created = true
		err = c.create("conform:///" + s.Name)
	}
	if err != nil {
		return errors.Join(err, c.close())
	}
	return nil
}

// create creates the driver's channel to target with the scenario's
// service config and idle timeout.
func (c *driverClient) create(target string) error {
	return c.drv.CreateWith(target, c.sc, driver.CreateOptions{IdleTimeout: c.lr.s.Client.IdleTimeout})
}

// labResolver writes the files that make the lab DNS the driver's system
// resolver and starts the lab DNS.
func (c *driverClient) labResolver() error {
	dir, err := os.MkdirTemp("", "conform-resolver-")
	if err != nil {
		return err
	}
	c.resolverDir = dir
	if err := dns.WriteResolverFiles(dir); err != nil {
		c.removeResolverDir()
		return err
	}
	if err := c.lr.startDNS(); err != nil {
		c.removeResolverDir()
		return err
	}
	return nil
}

func (c *driverClient) removeResolverDir() {
	if c.resolverDir != "" {
		os.RemoveAll(c.resolverDir)
		c.resolverDir = ""
	}
}

func (c *driverClient) close() error {
	defer c.removeResolverDir()
	if c.drv == nil {
		return nil
	}
	return c.drv.Close()
}

// describe names the implementation as the driver named it, and the
// driver's capabilities in Env.
func (c *driverClient) describe(hd *trace.Header) {
	h := c.hello
	if h.Impl == "" {
		return // the driver did not say hello
	}
	hd.Impl, hd.ImplVersion = h.Impl, h.Version
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
	hd.Env[trace.EnvDriverCan], hd.Env[trace.EnvDriverCannot] = strings.Join(can, ","), strings.Join(cannot, ",")
	if h.Can[driver.CanStallWatch] { // its own process watched: see trace.EnvStallWatch
		hd.Env[trace.EnvStallWatch] = trace.StallWatchClient
	}
}

// substitute lets a step that waits on the root policy's state wait on the
// channel's state instead when the implementation does not expose its
// policy's events: both are the state the channel reports.
func (c *driverClient) substitute(kind string) string {
	if c.hello.Impl != driver.Reference && kind == string(trace.KindBalancerState) {
		return string(trace.KindChannelState)
	}
	return kind
}

// setConfig sends the step's service config (the client's form, standard
// policy names) to the driver, whose resolver hands it to the channel with
// the last addresses; resolve steps after it carry it too.
func (c *driverClient) setConfig(a scenario.SetConfig) error {
	if !c.hello.Can[driver.CanConfigUpdate] {
		return fmt.Errorf("%s cannot change its channel's service config during a run (hello's %s)", c.hello.Impl, driver.CanConfigUpdate)
	}
	sc := scenario.Client{LBPolicy: a.LBPolicy, LBConfig: a.LBConfig, ServiceConfig: a.ServiceConfig}.EffectiveServiceConfig()
	c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindConfigUpdate, Detail: sc})
	c.sc = sc
	return c.drv.Config(sc)
}

func (c *driverClient) startRPC(a scenario.StartRPC) error {
	return c.drv.StartRPC(driver.RPC{ID: a.ID, Method: netlab.NameMethod, WaitForReady: a.WaitForReady, Deadline: a.Deadline, Metadata: a.Metadata})
}

// resolve records the update and gives it to the driver, or serves it from
// the lab DNS.
func (c *driverClient) resolve(a scenario.ResolverUpdate) error {
	if c.lr.s.Client.Target == scenario.TargetDNS {
		a = scenario.DNSAnswer(a) // the records, as the DNS resolver returns them
	}
	eps, err := c.lr.s.ConcreteEndpoints(a.Endpoints, AddrOf)
	if err != nil {
		return err
	}
	c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: eps})
	if c.lr.dns != nil {
		return c.resolveDNS(eps)
	}
	return c.drv.Resolve(eps, endpointAttrs(a))
}

// xdsNode is the node id in the bootstrap conform gives drivers.
const driverXDSNode = "conform-client0"

// xdsEnv is a driver's environment for an xds target: the lab server's
// bootstrap, inline (gRFC A27's GRPC_XDS_BOOTSTRAP_CONFIG, which grpc-go,
// grpc-js and C-core read). GRPC_XDS_BOOTSTRAP, a file that would take
// precedence, is never passed on (the driver's environment is built afresh).
func xdsEnv() []string {
	return []string{"GRPC_XDS_BOOTSTRAP_CONFIG=" + string(xdsserver.Bootstrap(driverXDSNode))}
}

// dnsName is the name the lab DNS serves a scenario's addresses under.
func dnsName(s *scenario.Scenario) string { return strings.ToLower(s.Name) + ".conform" }

// resolveDNS serves a resolver update from the lab DNS (flattened: DNS has
// no endpoints) and creates the channel with the first one.
func (c *driverClient) resolveDNS(eps [][]string) error {
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
	for _, name := range dnsNames(c.lr.s) {
		if err := c.lr.dns.Set(name, addrs, time.Second); err != nil {
			return err
		}
	}
	if c.created {
		return nil
	}
	c.created = true
	if c.lr.s.Client.Target == scenario.TargetDNS {
		// The system resolver is the lab DNS (labResolver): the target
		// any application would use.
		return c.create("dns:///" + net.JoinHostPort(dnsName(c.lr.s), strconv.Itoa(netlab.DefaultPort)))
	}
	return c.create(dns.Target(dnsName(c.lr.s), netlab.DefaultPort))
}

// dnsNames are the names the lab DNS serves the resolve steps under: the
// scenario's own name for a driver resolving through DNS, or, with an xds
// target, every LOGICAL_DNS cluster's name (each resolves to the last
// resolve step's addresses, as in the reference's runs).
func dnsNames(s *scenario.Scenario) []string {
	if s.Client.Target != scenario.TargetXDS {
		return []string{dnsName(s)}
	}
	var names []string
	for _, x := range xdsSteps(s) {
		for _, c := range x.Clusters {
			if c.Type == xds.ClusterLogicalDNS && !slices.Contains(names, c.DNSHost) {
				names = append(names, c.DNSHost)
			}
		}
	}
	return names
}
