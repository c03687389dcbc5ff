// Package xdsres turns the resources of a scenario's xds step (xds.Resources,
// harness/scenario/xds) into the Envoy protos the lab's management server
// (netlab/xdsserver) serves, and the server's events into trace events.
//
// It builds what the model says, invalid resources included (an
// idle_timeout out of range, an upstream_config of another type, an empty
// aggregate cluster, a gap in priorities, invalid additional addresses):
// those are the scenarios' NACK cases. Addresses become concrete through the runner's AddrFunc
// (harness/runner.AddrOf), the one every runner uses.
package xdsres

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregate "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	pickfirst "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	httpopts "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
)

// Extension names used in the resources.
const (
	RouterFilter    = "envoy.filters.http.router"
	AggregateType   = "envoy.clusters.aggregate"
	PickFirstPolicy = "envoy.load_balancing_policies.pick_first"
	HTTPOptionsName = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

// Options are what the model leaves to the runner.
type Options struct {
	// AddrOf makes endpoints' addresses concrete (harness/runner.AddrOf).
	AddrOf scenario.AddrFunc
	// Port is a LOGICAL_DNS cluster's port when the model gives none: the
	// backends' port.
	Port int
}

// Version is the version an xds step gives its resources: its own, or the
// step's number among the scenario's xds steps (1-based) as text.
func Version(x xds.Resources, n int) string {
	if x.Version != "" {
		return x.Version
	}
	return strconv.Itoa(n)
}

// Build returns the resources of x per type, all four types present (an
// empty list removes every resource of a type), in the model's order. s is
// the scenario x belongs to (for the backends' indexes).
func Build(s *scenario.Scenario, x xds.Resources, o Options) (map[resource.Type][]types.Resource, error) {
	if o.AddrOf == nil {
		return nil, fmt.Errorf("xdsres: Options.AddrOf is nil")
	}
	out := map[resource.Type][]types.Resource{
		resource.ListenerType: {}, resource.RouteType: {}, resource.ClusterType: {}, resource.EndpointType: {},
	}
	for _, l := range x.Listeners {
		r, err := Listener(l)
		if err != nil {
			return nil, err
		}
		out[resource.ListenerType] = append(out[resource.ListenerType], r)
	}
	for _, rc := range x.RouteConfigs {
		out[resource.RouteType] = append(out[resource.RouteType], RouteConfig(rc))
	}
	for _, c := range x.Clusters {
		r, err := Cluster(c, o.Port)
		if err != nil {
			return nil, err
		}
		out[resource.ClusterType] = append(out[resource.ClusterType], r)
	}
	for _, la := range x.Endpoints {
		r, err := LoadAssignment(s, la, o.AddrOf)
		if err != nil {
			return nil, err
		}
		out[resource.EndpointType] = append(out[resource.EndpointType], r)
	}
	return out, nil
}

// ads is a config source naming the ADS stream.
func ads() *core.ConfigSource {
	return &core.ConfigSource{
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
		ResourceApiVersion:    core.ApiVersion_V3,
	}
}

func anyOf(m proto.Message) (*anypb.Any, error) {
	a, err := anypb.New(m)
	if err != nil {
		return nil, fmt.Errorf("xdsres: %T: %w", m, err)
	}
	return a, nil
}

// Listener is an API listener whose HTTP connection manager gets its
// routes by RDS over ADS, with the router filter (gRFC A27).
func Listener(l xds.Listener) (*listener.Listener, error) {
	rf, err := anyOf(&router.Router{})
	if err != nil {
		return nil, err
	}
	m, err := anyOf(&hcm.HttpConnectionManager{
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{ConfigSource: ads(), RouteConfigName: l.RouteConfig}},
		HttpFilters:    []*hcm.HttpFilter{{Name: RouterFilter, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: rf}}},
	})
	if err != nil {
		return nil, err
	}
	return &listener.Listener{Name: l.Name, ApiListener: &listener.ApiListener{ApiListener: m}}, nil
}

// RouteConfig has one virtual host for every domain with one route: every
// path to the cluster, with a hash_policy on rc.HashHeader when it is set
// (A42, Hash Policy: a header policy).
func RouteConfig(rc xds.RouteConfig) *route.RouteConfiguration {
	act := &route.RouteAction{ClusterSpecifier: &route.RouteAction_Cluster{Cluster: rc.Cluster}}
	if rc.HashHeader != "" {
		act.HashPolicy = []*route.RouteAction_HashPolicy{{
			PolicySpecifier: &route.RouteAction_HashPolicy_Header_{Header: &route.RouteAction_HashPolicy_Header{HeaderName: rc.HashHeader}},
		}}
	}
	return &route.RouteConfiguration{
		Name: rc.Name,
		VirtualHosts: []*route.VirtualHost{{
			Name:    rc.Name,
			Domains: []string{"*"},
			Routes: []*route.Route{{
				Match:  &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/"}},
				Action: &route.Route_Route{Route: act},
			}},
		}},
	}
}

// Cluster is one CDS resource; port is a LOGICAL_DNS cluster's port when
// the model gives none.
func Cluster(c xds.Cluster, port int) (*cluster.Cluster, error) {
	out := &cluster.Cluster{Name: c.Name}
	switch c.Type {
	case xds.ClusterEDS:
		out.ClusterDiscoveryType = &cluster.Cluster_Type{Type: cluster.Cluster_EDS}
		out.EdsClusterConfig = &cluster.Cluster_EdsClusterConfig{EdsConfig: ads()}
	case xds.ClusterLogicalDNS:
		out.ClusterDiscoveryType = &cluster.Cluster_Type{Type: cluster.Cluster_LOGICAL_DNS}
		p := c.DNSPort
		if p == 0 {
			p = port
		}
		out.LoadAssignment = &endpoint.ClusterLoadAssignment{
			ClusterName: c.Name,
			Endpoints: []*endpoint.LocalityLbEndpoints{{LbEndpoints: []*endpoint.LbEndpoint{{
				HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{Address: &core.Address{
					Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
						Address: c.DNSHost, PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(p)},
					}},
				}}},
			}}}},
		}
	case xds.ClusterAggregate:
		cfg, err := anyOf(&aggregate.ClusterConfig{Clusters: c.Clusters})
		if err != nil {
			return nil, err
		}
		out.ClusterDiscoveryType = &cluster.Cluster_ClusterType{ClusterType: &cluster.Cluster_CustomClusterType{
			Name: AggregateType, TypedConfig: cfg,
		}}
	default:
		return nil, fmt.Errorf("xdsres: cluster %q: unknown type %q", c.Name, c.Type)
	}
	switch c.LBPolicy {
	case "", xds.RoundRobin:
		out.LbPolicy = cluster.Cluster_ROUND_ROBIN
	case xds.RingHash:
		out.LbPolicy = cluster.Cluster_RING_HASH
		rh := &cluster.Cluster_RingHashLbConfig{HashFunction: cluster.Cluster_RingHashLbConfig_XX_HASH}
		if c.MinRingSize != 0 {
			rh.MinimumRingSize = wrapperspb.UInt64(c.MinRingSize)
		}
		if c.MaxRingSize != 0 {
			rh.MaximumRingSize = wrapperspb.UInt64(c.MaxRingSize)
		}
		out.LbConfig = &cluster.Cluster_RingHashLbConfig_{RingHashLbConfig: rh}
	case xds.PickFirst:
		// A62: pick_first is configured through the load_balancing_policy
		// field of A52 (custom LB policies), with shuffle_address_list.
		cfg, err := anyOf(&pickfirst.PickFirst{ShuffleAddressList: c.Shuffle})
		if err != nil {
			return nil, err
		}
		out.LoadBalancingPolicy = &cluster.LoadBalancingPolicy{Policies: []*cluster.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &core.TypedExtensionConfig{Name: PickFirstPolicy, TypedConfig: cfg},
		}}}
	default:
		return nil, fmt.Errorf("xdsres: cluster %q: unknown policy %q", c.Name, c.LBPolicy)
	}
	if od := c.OutlierDetection; od != nil {
		out.OutlierDetection = outlierDetection(od)
	}
	if uc := c.UpstreamConfig; uc != nil {
		u, err := upstreamConfig(uc)
		if err != nil {
			return nil, fmt.Errorf("xdsres: cluster %q: %w", c.Name, err)
		}
		out.UpstreamConfig = u
	}
	return out, nil
}

func outlierDetection(od *xds.OutlierDetection) *cluster.OutlierDetection {
	dur := func(d time.Duration) *durationpb.Duration {
		if d == 0 {
			return nil
		}
		return durationpb.New(d)
	}
	u32 := func(v uint32) *wrapperspb.UInt32Value {
		if v == 0 {
			return nil
		}
		return wrapperspb.UInt32(v)
	}
	out := &cluster.OutlierDetection{
		Interval:           dur(od.Interval),
		BaseEjectionTime:   dur(od.BaseEjectionTime),
		MaxEjectionTime:    dur(od.MaxEjectionTime),
		MaxEjectionPercent: u32(od.MaxEjectionPercent),
		// Unset, enforcing_success_rate is 100: the model's "off" is 0, said.
		EnforcingSuccessRate:       wrapperspb.UInt32(0),
		EnforcingFailurePercentage: wrapperspb.UInt32(0),
	}
	if sr := od.SuccessRate; sr != nil {
		out.EnforcingSuccessRate = wrapperspb.UInt32(sr.Enforcement)
		out.SuccessRateStdevFactor = u32(sr.StdevFactor)
		out.SuccessRateMinimumHosts = u32(sr.MinimumHosts)
		out.SuccessRateRequestVolume = u32(sr.RequestVolume)
	}
	if fp := od.FailurePercentage; fp != nil {
		out.EnforcingFailurePercentage = wrapperspb.UInt32(fp.Enforcement)
		out.FailurePercentageThreshold = u32(fp.Threshold)
		out.FailurePercentageMinimumHosts = u32(fp.MinimumHosts)
		out.FailurePercentageRequestVolume = u32(fp.RequestVolume)
	}
	return out
}

// upstreamConfig builds the A75 field as the model says, out-of-range
// durations included (proto encoding does not check them; gRPC must).
func upstreamConfig(uc *xds.UpstreamConfig) (*core.TypedExtensionConfig, error) {
	if uc.TypeURL != "" {
		return &core.TypedExtensionConfig{Name: "conform.other", TypedConfig: &anypb.Any{TypeUrl: uc.TypeURL}}, nil
	}
	h := uc.HTTPProtocolOptions
	opts := &httpopts.HttpProtocolOptions{}
	if h.Common || h.IdleTimeout != nil {
		opts.CommonHttpProtocolOptions = &core.HttpProtocolOptions{}
	}
	if d := h.IdleTimeout; d != nil {
		opts.CommonHttpProtocolOptions.IdleTimeout = &durationpb.Duration{Seconds: d.Seconds, Nanos: d.Nanos}
	}
	a, err := anyOf(opts)
	if err != nil {
		return nil, err
	}
	return &core.TypedExtensionConfig{Name: HTTPOptionsName, TypedConfig: a}, nil
}

// LoadAssignment is one EDS resource: priorities numbered by position,
// localities by sub_zone, endpoints with their additional addresses (A61).
func LoadAssignment(s *scenario.Scenario, la xds.LoadAssignment, addrOf scenario.AddrFunc) (*endpoint.ClusterLoadAssignment, error) {
	out := &endpoint.ClusterLoadAssignment{ClusterName: la.Cluster}
	for p, pr := range la.Priorities {
		for _, l := range pr.Localities {
			lle := &endpoint.LocalityLbEndpoints{Locality: &core.Locality{SubZone: l.Name}, Priority: uint32(p)}
			if l.Weight != 0 {
				lle.LoadBalancingWeight = wrapperspb.UInt32(l.Weight)
			}
			for _, e := range l.Endpoints {
				addr, err := socketAddr(s, e.Addr, addrOf)
				if err != nil {
					return nil, fmt.Errorf("xdsres: load assignment %q: %w", la.Cluster, err)
				}
				ep, err := endpointOf(s, e, addr, addrOf)
				if err != nil {
					return nil, fmt.Errorf("xdsres: load assignment %q: %w", la.Cluster, err)
				}
				lbe := &endpoint.LbEndpoint{HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: ep}}
				if e.Health != "" {
					v, ok := core.HealthStatus_value[e.Health]
					if !ok {
						return nil, fmt.Errorf("xdsres: load assignment %q: unknown health status %q", la.Cluster, e.Health)
					}
					lbe.HealthStatus = core.HealthStatus(v)
				}
				if e.Weight != 0 {
					lbe.LoadBalancingWeight = wrapperspb.UInt32(e.Weight)
				}
				lle.LbEndpoints = append(lle.LbEndpoints, lbe)
			}
			out.Endpoints = append(out.Endpoints, lle)
		}
	}
	return out, nil
}

// endpointOf is e's Endpoint: its address, then its additional addresses,
// the valid ones first and the invalid forms after them.
func endpointOf(s *scenario.Scenario, e xds.Endpoint, addr *core.Address, addrOf scenario.AddrFunc) (*endpoint.Endpoint, error) {
	ep := &endpoint.Endpoint{Address: addr}
	for _, a := range e.AdditionalAddrs {
		more, err := socketAddr(s, a, addrOf)
		if err != nil {
			return nil, err
		}
		ep.AdditionalAddresses = append(ep.AdditionalAddresses, &endpoint.Endpoint_AdditionalAddress{Address: more})
	}
	for _, f := range e.InvalidAdditionalAddrs {
		bad, err := invalidAddr(f, e.Addr, addr.GetSocketAddress())
		if err != nil {
			return nil, err
		}
		ep.AdditionalAddresses = append(ep.AdditionalAddresses, bad)
	}
	return ep, nil
}

// invalidAddr is an additional_addresses entry of the invalid form f
// (xds.InvalidAddr…), on the host and port of the endpoint's own
// address own, whose symbolic form is a: A61's NACK cases, built as
// written (proto encoding checks none of them; gRPC must).
func invalidAddr(f string, a scenario.Addr, own *core.SocketAddress) (*endpoint.Endpoint_AdditionalAddress, error) {
	sock := func(sa *core.SocketAddress) *endpoint.Endpoint_AdditionalAddress {
		return &endpoint.Endpoint_AdditionalAddress{Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: sa}}}
	}
	port := &core.SocketAddress_PortValue{PortValue: own.GetPortValue()}
	backend, _, _ := a.Split()
	switch f {
	case xds.InvalidAddrUnset:
		return &endpoint.Endpoint_AdditionalAddress{}, nil
	case xds.InvalidAddrNoSocket:
		return &endpoint.Endpoint_AdditionalAddress{Address: &core.Address{Address: &core.Address_Pipe{Pipe: &core.Pipe{
			Path: "/conform/" + backend,
		}}}}, nil
	case xds.InvalidAddrNotIP:
		return sock(&core.SocketAddress{Address: backend + ".invalid", PortSpecifier: port}), nil
	case xds.InvalidAddrNoPortValue:
		return sock(&core.SocketAddress{Address: own.GetAddress(), PortSpecifier: &core.SocketAddress_NamedPort{NamedPort: "grpc"}}), nil
	case xds.InvalidAddrPortRange:
		return sock(&core.SocketAddress{Address: own.GetAddress(), PortSpecifier: &core.SocketAddress_PortValue{PortValue: 65536}}), nil
	}
	return nil, fmt.Errorf("%s: unknown invalid address form %q", a, f)
}

func socketAddr(s *scenario.Scenario, a scenario.Addr, addrOf scenario.AddrFunc) (*core.Address, error) {
	c, err := s.Concrete(a, addrOf)
	if err != nil {
		return nil, err
	}
	ap, err := netip.ParseAddrPort(c)
	if err != nil {
		return nil, fmt.Errorf("%s: the AddrFunc gave %q, not ip:port: %w", a, c, err)
	}
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
		Address: ap.Addr().String(), PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(ap.Port())},
	}}}, nil
}
