package client

import (
	"context"
	"net"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	testNode     = "conform-test-node"
	testListener = "svc.example"
	testRoute    = "route-0"
	waitFor      = 10 * time.Second
)

// nackAware keeps go-control-plane's snapshot cache from answering a NACK
// with the rejected resources at once (its SotW cache resends whenever the
// request's version differs from the snapshot's, and a NACK carries the
// previous version): a NACK is taken as "the client has seen the current
// snapshot", so the next response waits for the next snapshot.
//
// It also reports the nonce of every request it has turned into a watch, so
// that a test can wait for the server to have taken an ACK or NACK before it
// installs the next snapshot.
type nackAware struct {
	cachev3.SnapshotCache
	taken chan string
}

func (c nackAware) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	if req.GetErrorDetail() != nil {
		if snap, err := c.GetSnapshot(req.GetNode().GetId()); err == nil {
			req = proto.Clone(req).(*cachev3.Request)
			req.VersionInfo = snap.GetVersion(req.GetTypeUrl())
		}
	}
	cancel, err := c.SnapshotCache.CreateWatch(req, sub, ch)
	c.taken <- req.GetResponseNonce()
	return cancel, err
}

// result is one call of the watcher.
type result struct {
	cfg *Config
	err error
}

// env is an in-process ADS server (go-control-plane's snapshot cache and
// server over bufconn) and a Client watching testListener.
type env struct {
	t       *testing.T
	cache   cachev3.SnapshotCache
	client  *Client
	events  chan RequestEvent
	results chan result
	taken   chan string
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{
		t:       t,
		cache:   cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil),
		events:  make(chan RequestEvent, 1000),
		results: make(chan result, 1000),
		taken:   make(chan string, 10000),
	}
	ctx, cancel := context.WithCancel(context.Background())
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, serverv3.NewServer(ctx, nackAware{e.cache, e.taken}, nil))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///ads", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return lis.DialContext(ctx)
	}), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	opts.Conn = conn
	opts.NodeID = testNode
	if opts.Listener == "" {
		opts.Listener = testListener
	}
	opts.Observer = func(ev RequestEvent) { e.events <- ev }
	e.client, err = New(opts, func(c *Config, err error) { e.results <- result{c, err} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.client.Close()
		conn.Close()
		gs.Stop()
		cancel()
		<-served
	})
	return e
}

// set installs a snapshot of the given resources at version.
func (e *env) set(version string, res ...types.Resource) {
	e.t.Helper()
	m := map[resource.Type][]types.Resource{}
	for _, r := range res {
		var typ string
		switch r.(type) {
		case *listenerv3.Listener:
			typ = resource.ListenerType
		case *routev3.RouteConfiguration:
			typ = resource.RouteType
		case *clusterv3.Cluster:
			typ = resource.ClusterType
		case *endpointv3.ClusterLoadAssignment:
			typ = resource.EndpointType
		}
		m[typ] = append(m[typ], r)
	}
	snap, err := cachev3.NewSnapshot(version, m)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.cache.SetSnapshot(context.Background(), testNode, snap); err != nil {
		e.t.Fatal(err)
	}
}

// answer waits for the ACK or NACK of the response of type url at version.
func (e *env) answer(url, version string) RequestEvent {
	e.t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case ev := <-e.events:
			if ev.TypeURL == url && ev.ResponseVersion == version && (ev.Kind == ACK || ev.Kind == NACK) {
				e.waitTaken(ev.Nonce, timeout)
				return ev
			}
		case <-timeout:
			e.t.Fatalf("no ACK/NACK of %s version %q within %v", shortType(url), version, waitFor)
		}
	}
}

// waitTaken waits for the server to have made a watch of the request
// answering nonce.
func (e *env) waitTaken(nonce string, timeout <-chan time.Time) {
	e.t.Helper()
	for {
		select {
		case n := <-e.taken:
			if n == nonce {
				return
			}
		case <-timeout:
			e.t.Fatalf("the server did not take the request answering nonce %q within %v", nonce, waitFor)
		}
	}
}

// config waits for a configuration (or error) that satisfies ok.
func (e *env) config(ok func(result) bool) result {
	e.t.Helper()
	timeout := time.After(waitFor)
	var last result
	for {
		select {
		case r := <-e.results:
			if ok(r) {
				return r
			}
			last = r
		case <-timeout:
			e.t.Fatalf("no matching watcher result within %v; last: cfg=%+v err=%v", waitFor, last.cfg, last.err)
		}
	}
}

func anyOf(t *testing.T, m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func ads() *corev3.ConfigSource {
	return &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
}

func listener(t *testing.T, name, route string) *listenerv3.Listener {
	hcm := &hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: ads(), RouteConfigName: route}}}
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: anyOf(t, hcm)}}
}

func routeTo(name, cluster string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{
		Name: "vh", Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: ""}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
		}},
	}}}
}

func edsCluster(name string, mods ...func(*clusterv3.Cluster)) *clusterv3.Cluster {
	c := &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: ads(), ServiceName: name + "-eds"},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func aggCluster(t *testing.T, name string, children ...string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name: name,
		ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
			Name: "envoy.clusters.aggregate", TypedConfig: anyOf(t, &aggregatev3.ClusterConfig{Clusters: children}),
		}},
	}
}

func dnsCluster(name, host string, port uint32) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: sockAddr(host, port),
			}}}},
		}}},
	}
}

func sockAddr(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// lbEndpoint is an endpoint with its first address and additional ones.
func lbEndpoint(hs corev3.HealthStatus, addr string, port uint32, extra ...*corev3.Address) *endpointv3.LbEndpoint {
	ep := &endpointv3.Endpoint{Address: sockAddr(addr, port)}
	for _, a := range extra {
		ep.AdditionalAddresses = append(ep.AdditionalAddresses, &endpointv3.Endpoint_AdditionalAddress{Address: a})
	}
	return &endpointv3.LbEndpoint{HealthStatus: hs, HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: ep}}
}

func locality(priority, weight uint32, zone string, eps ...*endpointv3.LbEndpoint) *endpointv3.LocalityLbEndpoints {
	return &endpointv3.LocalityLbEndpoints{
		Locality:            &corev3.Locality{Region: "r", Zone: zone},
		LoadBalancingWeight: wrapperspb.UInt32(weight),
		Priority:            priority,
		LbEndpoints:         eps,
	}
}

func cla(name string, ls ...*endpointv3.LocalityLbEndpoints) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: ls}
}
