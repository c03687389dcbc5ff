package runner

import (
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/xdsres"
	"github.com/conformlab/conform/netlab/xdsserver"
	xdsresolver "github.com/conformlab/conform/reference/xds/resolver"
)

// startXDS starts the lab's management server in the client's namespace;
// every request it receives goes into the run's event log as an
// xds-request.
func (lw *labWorld) startXDS() error {
	srv, err := xdsserver.Start(lw.lab, "client0",
		xdsserver.WithClock(lw.lab.Now),
		xdsserver.WithEventHook(func(e xdsserver.Event) {
			if te, ok := xdsres.TraceEvent(e); ok {
				lw.log.Add(te)
			}
		}))
	if err != nil {
		return err
	}
	lw.xds, lw.dns = srv, &xdsDNS{}
	return nil
}

// connectXDS builds the channel for "conform-xds:///<listener>": the
// reference xDS resolver, reaching the management server through the lab's
// dialer, with the recorder wrapped around the tree its service config
// carries (xdsRecordingCC), whose events share the lab's timebase. The
// resolver takes its options of the scenario's environment (lw.env).
func (lw *labWorld) connectXDS(seed uint64) error {
	sinkSeq.Lock()
	sinkSeq.n++
	lw.sink, lw.seed = fmt.Sprintf("runner-lab-%d", sinkSeq.n), seed
	sinkSeq.Unlock()
	lw.unreg = recorder.RegisterSink(lw.sink, timedSink{lw.log, lw.lab})
	b := xdsBuilder{Builder: xdsresolver.NewBuilder(xdsresolver.Options{
		ServerAddress: xdsserver.ServerURI(),
		NodeID:        xdsNode,
		Dial:          lw.lab.GRPCDialer(),
		LookupHost:    lw.dns.lookupHost,

		AggregateClusterBackwardCompat: lw.env.aggregateClusterBackwardCompat,
	}), lw: lw}
	cc, err := grpc.NewClient(xdsresolver.Scheme+":///"+lw.s.Client.Listener,
		grpc.WithResolvers(b),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(lw.lab.GRPCDialer()))
	if err != nil {
		lw.unreg()
		return err
	}
	lw.cc = cc
	cc.Connect() // builds the resolver: the client subscribes to the listener
	lw.wg.Add(1)
	go lw.watchStates()
	return nil
}

// setXDS is an xds step: the management server's resources change.
func (lw *labWorld) setXDS(x scenario.XDSResources) error {
	if lw.xds == nil {
		return fmt.Errorf("an xds step needs client.target %s", scenario.TargetXDS)
	}
	lw.xdsN++
	res, err := xdsres.Build(lw.s, x, xdsOptions)
	if err != nil {
		return err
	}
	return lw.xds.SetResources(xdsres.Version(x, lw.xdsN), res)
}

// xdsBuilder builds the reference xDS resolver on an xdsRecordingCC.
type xdsBuilder struct {
	resolver.Builder
	lw *labWorld
}

func (b xdsBuilder) Build(t resolver.Target, cc resolver.ClientConn, o resolver.BuildOptions) (resolver.Resolver, error) {
	return b.Builder.Build(t, &xdsRecordingCC{ClientConn: cc, lw: b.lw}, o)
}

// xdsRecordingCC is the channel as the xDS resolver sees it. It wraps the
// tree of every service config the resolver parses in the recorder (with
// the run's sink and seed), as connect wraps a scenario's policy, and
// records the resolver's pushes as the simulator records them: config-update
// (the root policy's config) when the tree changed, then resolver-update;
// and resolver-error. The resolver calls it from one goroutine.
type xdsRecordingCC struct {
	resolver.ClientConn
	lw      *labWorld
	parsed  string // the config of the last tree parsed
	current string // the config of the tree in force
}

// serviceConfigPrefix and serviceConfigSuffix frame the one
// LoadBalancingConfig object of the resolver's service config.
const (
	serviceConfigPrefix = `{"loadBalancingConfig":[`
	serviceConfigSuffix = `]}`
)

func (c *xdsRecordingCC) ParseServiceConfig(js string) *serviceconfig.ParseResult {
	tree, ok := strings.CutPrefix(js, serviceConfigPrefix)
	if ok {
		tree, ok = strings.CutSuffix(tree, serviceConfigSuffix)
	}
	if !ok {
		return &serviceconfig.ParseResult{Err: fmt.Errorf("runner: the xDS resolver's service config %q is not one loadBalancingConfig", js)}
	}
	name, config, err := rootPolicy([]byte(tree))
	if err == nil {
		config, err = c.lw.env.lbConfig(name, config)
	}
	if err != nil {
		return &serviceconfig.ParseResult{Err: fmt.Errorf("runner: the xDS resolver's tree: %w", err)}
	}
	c.parsed = config
	return c.ClientConn.ParseServiceConfig(c.lw.serviceConfig(name, config))
}

func (c *xdsRecordingCC) UpdateState(s resolver.State) error {
	lw := c.lw
	if c.parsed != c.current {
		c.current = c.parsed
		lw.log.Add(trace.Event{T: lw.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindConfigUpdate, Detail: c.current})
	}
	var eps [][]string
	for _, ep := range s.Endpoints {
		var addrs []string
		for _, a := range ep.Addresses {
			addrs = append(addrs, a.Addr)
		}
		eps = append(eps, addrs)
	}
	lw.log.Add(trace.Event{T: lw.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: eps})
	return c.ClientConn.UpdateState(s)
}

func (c *xdsRecordingCC) ReportError(err error) {
	c.lw.log.Add(trace.Event{T: c.lw.lab.Now(), Source: trace.SourceHarness, Kind: trace.KindResolverError, Err: err.Error()})
	c.ClientConn.ReportError(err)
}
