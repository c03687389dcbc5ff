// Package resolver is the reference's xDS resolver: a grpc-go resolver for
// targets "conform-xds:///<listener>" that watches the listener with
// reference/xds/client and turns each configuration into a resolver.State
// whose service config is A75's policy tree (see Build).
package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/reference/xds/client"
)

// Scheme is the resolver's URI scheme.
const Scheme = "conform-xds"

// BackwardCompatEnv is A75's migration switch. The policy code never reads
// the environment: a harness that honours the switch (scenario client.env)
// sets Options.AggregateClusterBackwardCompat.
const BackwardCompatEnv = "GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT"

// Options configures the resolver: the bootstrap (server address, node id)
// and how it reaches the network.
type Options struct {
	// ServerAddress is the xDS management server, an "ip:port" literal.
	ServerAddress string
	// NodeID is the node.id the client sends.
	NodeID string
	// Dial opens connections to ServerAddress (in the lab, the lab's
	// dialer). Nil uses grpc's default dialer.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Conn, when set, carries the ADS stream instead of a connection to
	// ServerAddress; the caller owns it.
	Conn grpc.ClientConnInterface
	// LookupHost resolves a LOGICAL_DNS cluster's name to IP addresses
	// (net.Resolver.LookupHost fits). In the lab it must query the lab's DNS
	// from the client namespace. Nil fails every LOGICAL_DNS cluster.
	LookupHost func(ctx context.Context, host string) ([]string, error)
	// AggregateClusterBackwardCompat is A75's migration switch (see
	// client.Options).
	AggregateClusterBackwardCompat bool
	// Observer is told of every xDS request (client.Options.Observer).
	Observer func(client.RequestEvent)
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

// NewBuilder returns a resolver.Builder for Scheme.
func NewBuilder(opts Options) resolver.Builder {
	return &builder{opts: opts}
}

type builder struct{ opts Options }

func (b *builder) Scheme() string { return Scheme }

func (b *builder) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	listener := strings.TrimPrefix(target.URL.Path, "/")
	if listener == "" {
		listener = target.URL.Opaque
	}
	if listener == "" {
		return nil, fmt.Errorf("%s: target %q names no listener", Scheme, target.URL.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &xdsResolver{cc: cc, opts: b.opts, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), done: make(chan struct{}), dnsLast: map[string][]string{}}
	conn := b.opts.Conn
	if conn == nil {
		if b.opts.ServerAddress == "" {
			cancel()
			return nil, errors.New(Scheme + ": Options has neither Conn nor ServerAddress")
		}
		dopts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if b.opts.Dial != nil {
			dopts = append(dopts, grpc.WithContextDialer(b.opts.Dial))
		}
		cc, err := grpc.NewClient("passthrough:///"+b.opts.ServerAddress, dopts...)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%s: xDS server connection: %v", Scheme, err)
		}
		r.ownConn = cc
		conn = cc
	}
	go r.run()
	c, err := client.New(client.Options{
		Conn:                           conn,
		NodeID:                         b.opts.NodeID,
		Listener:                       listener,
		AggregateClusterBackwardCompat: b.opts.AggregateClusterBackwardCompat,
		Observer:                       b.opts.Observer,
		Logger:                         b.opts.Logger,
	}, r.onConfig)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.client = c
	return r, nil
}

// xdsResolver owns the xDS client and one goroutine (run) that resolves
// LOGICAL_DNS names and pushes states, so that neither the client's
// goroutine nor ResolveNow's caller waits on DNS.
type xdsResolver struct {
	cc      resolver.ClientConn
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	client  *client.Client
	ownConn *grpc.ClientConn
	kick    chan struct{}
	done    chan struct{}

	mu     sync.Mutex
	cfg    *client.Config // latest configuration
	cfgErr error          // latest error, when it is newer than cfg

	dnsLast map[string][]string // owned by run: last good DNS answer per cluster
}

func (r *xdsResolver) onConfig(cfg *client.Config, err error) {
	r.mu.Lock()
	if err != nil {
		r.cfgErr = err
	} else {
		r.cfg, r.cfgErr = cfg, nil
	}
	r.mu.Unlock()
	r.poke()
}

func (r *xdsResolver) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// ResolveNow re-resolves the LOGICAL_DNS names (A37: the DNS discovery
// mechanism supports re-resolution; EDS does not): a configuration without
// them has nothing to re-resolve, and pushing its state again would only
// hand the policies the addresses they have.
func (r *xdsResolver) ResolveNow(resolver.ResolveNowOptions) {
	r.mu.Lock()
	cfg := r.cfg
	r.mu.Unlock()
	if cfg != nil && hasLogicalDNS(cfg) {
		r.poke()
	}
}

// hasLogicalDNS reports whether any of cfg's leaf clusters is LOGICAL_DNS.
func hasLogicalDNS(cfg *client.Config) bool {
	for _, leaf := range cfg.Leaves {
		if cfg.Clusters[leaf].Kind == client.KindLogicalDNS {
			return true
		}
	}
	return false
}

func (r *xdsResolver) Close() {
	r.cancel()
	if r.client != nil {
		r.client.Close()
	}
	<-r.done
	if r.ownConn != nil {
		r.ownConn.Close()
	}
}

func (r *xdsResolver) run() {
	defer close(r.done)
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.kick:
		}
		r.mu.Lock()
		cfg, cfgErr := r.cfg, r.cfgErr
		r.mu.Unlock()
		if cfgErr != nil {
			r.cc.ReportError(cfgErr)
			continue
		}
		if cfg == nil {
			continue
		}
		state, err := r.state(cfg)
		if err != nil {
			r.cc.ReportError(err)
			continue
		}
		_ = r.cc.UpdateState(state)
	}
}

// state resolves cfg's LOGICAL_DNS leaves and builds the resolver state.
// A failed lookup keeps the cluster's last good answer, or leaves it with
// no endpoints (A37).
func (r *xdsResolver) state(cfg *client.Config) (resolver.State, error) {
	dns := map[string][]string{}
	for _, leaf := range cfg.Leaves {
		cl := cfg.Clusters[leaf]
		if cl.Kind != client.KindLogicalDNS {
			continue
		}
		addrs, err := r.lookup(cl)
		if err != nil {
			if r.opts.Logger != nil {
				r.opts.Logger.Debug("LOGICAL_DNS lookup failed", "cluster", leaf, "err", err)
			}
			dns[leaf] = r.dnsLast[leaf]
			continue
		}
		r.dnsLast[leaf] = addrs
		dns[leaf] = addrs
	}
	eps, lb, err := Build(cfg, dns)
	if err != nil {
		return resolver.State{}, err
	}
	sc := r.cc.ParseServiceConfig(`{"loadBalancingConfig":[` + string(lb) + `]}`)
	if sc.Err != nil {
		return resolver.State{}, fmt.Errorf("%s: service config: %v", Scheme, sc.Err)
	}
	return resolver.State{Endpoints: eps, ServiceConfig: sc}, nil
}

func (r *xdsResolver) lookup(cl *client.Cluster) ([]string, error) {
	port := strconv.Itoa(int(cl.DNSPort))
	if ip := net.ParseIP(cl.DNSHost); ip != nil {
		return []string{net.JoinHostPort(cl.DNSHost, port)}, nil
	}
	if r.opts.LookupHost == nil {
		return nil, fmt.Errorf("no LookupHost to resolve %q", cl.DNSHost)
	}
	ips, err := r.opts.LookupHost(r.ctx, cl.DNSHost)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, net.JoinHostPort(ip, port))
	}
	return out, nil
}
