package xdsres

import (
	"fmt"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregate "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	pickfirst "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	httpopts "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/xdsserver"
)

func addrOf(_ string, i int, fam scenario.Family) string {
	if fam == scenario.IPv6 {
		return fmt.Sprintf("[fd00:c0f::b:%d]:50051", i+1)
	}
	return fmt.Sprintf("198.19.0.%d:50051", i+1)
}

// build decodes the scenario's testdata example and builds its n-th step.
func build(t *testing.T, step int) (map[resource.Type][]types.Resource, *scenario.Scenario) {
	t.Helper()
	s, err := scenario.DecodeFile("../scenario/testdata/xds-aggregate-ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	x, ok := s.Steps[step].Action.(scenario.SetXDS)
	if !ok {
		t.Fatalf("step %d is a %s", step, s.Steps[step].Kind())
	}
	rs, err := Build(s, x.Resources, Options{AddrOf: addrOf, Port: 50051})
	if err != nil {
		t.Fatal(err)
	}
	// Every resource survives the wire, as the server sends it.
	for typ, list := range rs {
		for _, r := range list {
			data, err := proto.Marshal(r)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			back := proto.Clone(r)
			proto.Reset(back)
			if err := proto.Unmarshal(data, back); err != nil || !proto.Equal(back, r) {
				t.Fatalf("%s does not survive the wire: %v", typ, err)
			}
		}
	}
	return rs, s
}

func clusterNamed(t *testing.T, rs map[resource.Type][]types.Resource, name string) *cluster.Cluster {
	t.Helper()
	for _, r := range rs[resource.ClusterType] {
		if c := r.(*cluster.Cluster); c.GetName() == name {
			return c
		}
	}
	t.Fatalf("no cluster %q", name)
	return nil
}

// TestBuild_ListenerRouteAndClusters: the listener names its route config
// over ADS with the router filter; the route sends everything to the
// cluster; aggregate, EDS and LOGICAL_DNS clusters have their types, the
// aggregate its ordered list, pick_first is A52's typed policy with shuffle
// (A62), ring_hash the lb_policy with sizes.
func TestBuild_ListenerRouteAndClusters(t *testing.T) {
	rs, _ := build(t, 1)
	if n := len(rs[resource.ListenerType]); n != 1 {
		t.Fatalf("%d listeners", n)
	}
	l := rs[resource.ListenerType][0].(*listener.Listener)
	m := &hcm.HttpConnectionManager{}
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	if l.GetName() != "svc.conform" || m.GetRds().GetRouteConfigName() != "rc1" || m.GetRds().GetConfigSource().GetAds() == nil ||
		len(m.GetHttpFilters()) != 1 || m.GetHttpFilters()[0].GetName() != RouterFilter {
		t.Errorf("listener = %v, hcm = %v", l, m)
	}
	rc := rs[resource.RouteType][0].(*route.RouteConfiguration)
	if got := rc.GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetCluster(); rc.GetName() != "rc1" || got != "agg" {
		t.Errorf("route config %q routes to %q", rc.GetName(), got)
	}

	agg := clusterNamed(t, rs, "agg")
	cfg := &aggregate.ClusterConfig{}
	if agg.GetClusterType().GetName() != AggregateType || agg.GetClusterType().GetTypedConfig().UnmarshalTo(cfg) != nil ||
		!cmp.Equal(cfg.GetClusters(), []string{"eds1", "dns1"}) {
		t.Errorf("aggregate cluster = %v", agg)
	}

	eds := clusterNamed(t, rs, "eds1")
	if eds.GetType() != cluster.Cluster_EDS || eds.GetEdsClusterConfig().GetEdsConfig().GetAds() == nil {
		t.Errorf("EDS cluster = %v", eds)
	}
	pols := eds.GetLoadBalancingPolicy().GetPolicies()
	pf := &pickfirst.PickFirst{}
	if len(pols) != 1 || pols[0].GetTypedExtensionConfig().GetTypedConfig().UnmarshalTo(pf) != nil || !pf.GetShuffleAddressList() {
		t.Errorf("pick_first policy = %v", pols)
	}
	od := eds.GetOutlierDetection()
	if od.GetInterval().AsDuration() != time.Second || od.GetBaseEjectionTime().AsDuration() != 30*time.Second ||
		od.GetMaxEjectionTime() != nil || od.GetMaxEjectionPercent().GetValue() != 50 ||
		od.GetEnforcingSuccessRate() == nil || od.GetEnforcingSuccessRate().GetValue() != 0 ||
		od.GetEnforcingFailurePercentage().GetValue() != 100 || od.GetFailurePercentageThreshold().GetValue() != 50 ||
		od.GetFailurePercentageRequestVolume().GetValue() != 5 {
		t.Errorf("outlier detection = %v", od)
	}

	dns := clusterNamed(t, rs, "dns1")
	sa := dns.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	if dns.GetType() != cluster.Cluster_LOGICAL_DNS || sa.GetAddress() != "svc.conform" || sa.GetPortValue() != 50051 {
		t.Errorf("LOGICAL_DNS cluster = %v", dns)
	}
	if dns.GetLbPolicy() != cluster.Cluster_RING_HASH || dns.GetRingHashLbConfig().GetMinimumRingSize().GetValue() != 16 ||
		dns.GetRingHashLbConfig().GetMaximumRingSize() != nil {
		t.Errorf("ring_hash = %v %v", dns.GetLbPolicy(), dns.GetRingHashLbConfig())
	}
}

// TestBuild_Endpoints: priorities by position, localities by sub_zone and
// weight, concrete addresses through the AddrFunc with A61's additional
// addresses, health and weights.
func TestBuild_Endpoints(t *testing.T) {
	rs, _ := build(t, 1)
	cla := rs[resource.EndpointType][0].(*endpoint.ClusterLoadAssignment)
	addr := func(host string, port uint32) *core.Address {
		return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: host, PortSpecifier: &core.SocketAddress_PortValue{PortValue: port}}}}
	}
	want := &endpoint.ClusterLoadAssignment{ClusterName: "eds1", Endpoints: []*endpoint.LocalityLbEndpoints{
		{Locality: &core.Locality{SubZone: "z1"}, LoadBalancingWeight: wrapU32(3), Priority: 0, LbEndpoints: []*endpoint.LbEndpoint{{
			HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{
				Address:             addr("fd00:c0f::b:1", 50051),
				AdditionalAddresses: []*endpoint.Endpoint_AdditionalAddress{{Address: addr("198.19.0.1", 50051)}},
			}},
			HealthStatus: core.HealthStatus_HEALTHY, LoadBalancingWeight: wrapU32(2),
		}}},
		{Locality: &core.Locality{SubZone: "z2"}, LoadBalancingWeight: wrapU32(1), Priority: 1, LbEndpoints: []*endpoint.LbEndpoint{{
			HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{Address: addr("198.19.0.2", 50051)}},
			HealthStatus:   core.HealthStatus_UNKNOWN,
		}}},
	}}
	if diff := cmp.Diff(want, cla, protocmp.Transform()); diff != "" {
		t.Errorf("load assignment (-want +got):\n%s", diff)
	}
}

// TestBuild_A75NACKCases: an idle_timeout out of range is sent as written,
// an upstream_config of another type as that type; a step without
// listeners still has all four types (empty), which removes them.
func TestBuild_A75NACKCases(t *testing.T) {
	rs, _ := build(t, 3)
	opts := &httpopts.HttpProtocolOptions{}
	uc := clusterNamed(t, rs, "eds1").GetUpstreamConfig()
	if uc.GetName() != HTTPOptionsName || uc.GetTypedConfig().UnmarshalTo(opts) != nil {
		t.Fatalf("upstream_config = %v", uc)
	}
	if it := opts.GetCommonHttpProtocolOptions().GetIdleTimeout(); it.GetSeconds() != -1 || it.GetNanos() != 1000000000 {
		t.Errorf("idle_timeout = %v, want seconds -1 nanos 1000000000", it)
	}
	rs, _ = build(t, 4)
	if got := clusterNamed(t, rs, "eds1").GetUpstreamConfig().GetTypedConfig().GetTypeUrl(); got != "type.googleapis.com/google.protobuf.Empty" {
		t.Errorf("upstream_config type URL = %q", got)
	}
	for _, typ := range []string{resource.ListenerType, resource.RouteType, resource.EndpointType} {
		if l, ok := rs[typ]; !ok || len(l) != 0 {
			t.Errorf("%s: %v (present %v), want an empty list", typ, l, ok)
		}
	}
	// The valid step's idle_timeout, for contrast.
	rs, _ = build(t, 1)
	if err := clusterNamed(t, rs, "eds1").GetUpstreamConfig().GetTypedConfig().UnmarshalTo(opts); err != nil ||
		opts.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration() != 30*time.Second {
		t.Errorf("idle_timeout = %v (%v)", opts.GetCommonHttpProtocolOptions().GetIdleTimeout(), err)
	}
}

// TestBuild_A61NACKCases: each invalid additional address form is sent as
// written, after the valid additional addresses, on the endpoint's own host
// and port.
func TestBuild_A61NACKCases(t *testing.T) {
	rs, _ := build(t, 5)
	cla := rs[resource.EndpointType][0].(*endpoint.ClusterLoadAssignment)
	sock := func(sa *core.SocketAddress) *endpoint.Endpoint_AdditionalAddress {
		return &endpoint.Endpoint_AdditionalAddress{Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: sa}}}
	}
	port := func(p uint32) *core.SocketAddress_PortValue { return &core.SocketAddress_PortValue{PortValue: p} }
	want := []*endpoint.Endpoint_AdditionalAddress{
		sock(&core.SocketAddress{Address: "198.19.0.1", PortSpecifier: port(50051)}),
		{},
		{Address: &core.Address{Address: &core.Address_Pipe{Pipe: &core.Pipe{Path: "/conform/b1"}}}},
		sock(&core.SocketAddress{Address: "b1.invalid", PortSpecifier: port(50051)}),
		sock(&core.SocketAddress{Address: "fd00:c0f::b:1", PortSpecifier: &core.SocketAddress_NamedPort{NamedPort: "grpc"}}),
		sock(&core.SocketAddress{Address: "fd00:c0f::b:1", PortSpecifier: port(65536)}),
	}
	got := cla.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAdditionalAddresses()
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("additional_addresses (-want +got):\n%s", diff)
	}
}

// TestVersion_NumbersStepsWithoutOne verifies a step's own version wins.
func TestVersion_NumbersStepsWithoutOne(t *testing.T) {
	if Version(xds.Resources{}, 3) != "3" || Version(xds.Resources{Version: "x"}, 3) != "x" {
		t.Error("Version")
	}
}

// TestTraceEvent_RequestsOnly: ACK, NACK (code by name, detail, rejected
// version) and subscribe become xds-request events; responses none.
func TestTraceEvent_RequestsOnly(t *testing.T) {
	nack := xdsserver.Event{T: time.Millisecond, Node: "n", TypeURL: resource.ClusterType, Kind: xdsserver.NACK,
		Version: "1", Nonce: "4", Names: []string{"c1"}, ErrorCode: 3, ErrorDetail: "bad", RespondedVersion: "2"}
	got, ok := TraceEvent(nack)
	want := trace.Event{T: time.Millisecond, Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest, Node: "n",
		TypeURL: resource.ClusterType, XDS: trace.XDSNACK, Version: "1", Nonce: "4", Names: []string{"c1"},
		Code: "INVALID_ARGUMENT", Err: "bad", Detail: "rejected 2"}
	if diff := cmp.Diff(want, got); !ok || diff != "" {
		t.Errorf("NACK (-want +got):\n%s", diff)
	}
	if e, _ := TraceEvent(xdsserver.Event{Kind: xdsserver.ACK, Nonce: "1"}); e.XDS != trace.XDSACK || e.Err != "" {
		t.Errorf("ACK = %v", e)
	}
	if e, _ := TraceEvent(xdsserver.Event{Kind: xdsserver.Subscribe}); e.XDS != trace.XDSSubscribe {
		t.Errorf("subscribe = %v", e)
	}
	if _, ok := TraceEvent(xdsserver.Event{Response: true}); ok {
		t.Error("a response became a trace event")
	}
}

func wrapU32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

// TestRouteConfig_HashHeader verifies a route's hash_header becomes one
// header hash policy on the route action (A42, Hash Policy), and that
// without it the route has none.
func TestRouteConfig_HashHeader(t *testing.T) {
	hp := RouteConfig(xds.RouteConfig{Name: "rc", Cluster: "c", HashHeader: "x-key"}).GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetHashPolicy()
	if len(hp) != 1 || hp[0].GetHeader().GetHeaderName() != "x-key" || hp[0].GetTerminal() {
		t.Errorf("hash_policy %v, want one header policy on x-key", hp)
	}
	if hp := RouteConfig(xds.RouteConfig{Name: "rc", Cluster: "c"}).GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetHashPolicy(); len(hp) != 0 {
		t.Errorf("hash_policy %v without hash_header, want none", hp)
	}
}
