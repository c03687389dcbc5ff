package runner

import (
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/xdsserver"
	xdsresolver "github.com/conformlab/conform/reference/xds/resolver"
)

// startXDS builds the channel for "conform-xds:///<listener>": the
// reference xDS resolver, reaching the lab's management server through the
// lab's dialer, with the recorder wrapped around the tree its service
// config carries (xdsRecordingCC). The resolver takes its options of the
// scenario's environment (c.switches), and its LOGICAL_DNS answers of the
// resolve steps (xdsDNS).
func (c *inProcess) startXDS() error {
	if !c.recorded {
		return &NotApplicable{Reason: c.name + " runs no xDS client in this process"}
	}
	c.dns = &xdsDNS{onQuery: c.lr.record}
	b := xdsBuilder{Builder: xdsresolver.NewBuilder(xdsresolver.Options{
		ServerAddress: xdsserver.ServerURI(),
		NodeID:        xdsNode,
		Dial:          c.lr.lab.GRPCDialer(),
		LookupHost:    c.dns.lookupHost,

		AggregateClusterBackwardCompat: c.switches.AggregateClusterBackwardCompat,
	}), c: c}
	var err error
	opts := []grpc.DialOption{grpc.WithResolvers(b), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(c.lr.lab.GRPCDialer())}
	if d := c.lr.s.Client.IdleTimeout; d > 0 {
		opts = append(opts, grpc.WithIdleTimeout(d))
	}
	c.cc, err = grpc.NewClient(xdsresolver.Scheme+":///"+c.lr.s.Client.Listener, opts...)
	return err
}

// xdsBuilder builds the reference xDS resolver on an xdsRecordingCC.
type xdsBuilder struct {
	resolver.Builder
	c *inProcess
}

func (b xdsBuilder) Build(t resolver.Target, cc resolver.ClientConn, o resolver.BuildOptions) (resolver.Resolver, error) {
	r, err := b.Builder.Build(t, &xdsRecordingCC{ClientConn: cc, c: b.c}, o)
	if err != nil {
		return nil, err
	}
	b.c.reResolv.set(r)
	return channelDeaf{r}, nil
}

// channelDeaf is the xDS resolver as the channel holds it: deaf to the
// channel's own requests for re-resolution. grpc-go's channel makes one on
// every failed connection attempt and lost connection, whatever the policy
// says; an xDS client's resolver does not act on those (grpc-go's ignores
// them: re-resolution of LOGICAL_DNS clusters is the LB policy's request,
// A37, which priority may drop, A56's ignore_reresolution_requests). The
// root policy's own requests reach the resolver through the recorder's
// sink (policyReResolution).
type channelDeaf struct{ resolver.Resolver }

func (channelDeaf) ResolveNow(resolver.ResolveNowOptions) {}

// policyReResolution forwards the root policy's requests for re-resolution
// to the xDS resolver, once it is built.
type policyReResolution struct {
	mu sync.Mutex
	r  resolver.Resolver
}

func (p *policyReResolution) set(r resolver.Resolver) {
	p.mu.Lock()
	p.r = r
	p.mu.Unlock()
}

// request asks the resolver to re-resolve, if there is one (with a
// scenario's own policy, there is none: the manual resolver ignores it).
func (p *policyReResolution) request() {
	p.mu.Lock()
	r := p.r
	p.mu.Unlock()
	if r != nil {
		r.ResolveNow(resolver.ResolveNowOptions{})
	}
}

// xdsRecordingCC is the channel as the xDS resolver sees it. It wraps the
// tree of every service config the resolver parses in the recorder (with
// the run's sink and seed), as connect wraps a scenario's policy, and
// records the resolver's pushes as the simulator records them: config-update
// (the root policy's config) when the tree changed, then resolver-update;
// and resolver-error. The resolver calls it from one goroutine.
type xdsRecordingCC struct {
	resolver.ClientConn
	c       *inProcess
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
		config, err = c.c.switches.Config(name, config)
	}
	if err != nil {
		return &serviceconfig.ParseResult{Err: fmt.Errorf("runner: the xDS resolver's tree: %w", err)}
	}
	c.parsed = config
	return c.ClientConn.ParseServiceConfig(c.c.serviceConfig(name, config))
}

func (c *xdsRecordingCC) UpdateState(s resolver.State) error {
	if c.parsed != c.current {
		c.current = c.parsed
		c.c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindConfigUpdate, Detail: c.current})
	}
	var eps [][]string
	for _, ep := range s.Endpoints {
		var addrs []string
		for _, a := range ep.Addresses {
			addrs = append(addrs, a.Addr)
		}
		eps = append(eps, addrs)
	}
	c.c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: eps})
	return c.ClientConn.UpdateState(s)
}

func (c *xdsRecordingCC) ReportError(err error) {
	c.c.lr.record(trace.Event{Source: trace.SourceHarness, Kind: trace.KindResolverError, Err: err.Error()})
	c.ClientConn.ReportError(err)
}
