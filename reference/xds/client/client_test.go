package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	pickfirstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func baseResources(t *testing.T, c *clusterv3.Cluster, eds *endpointv3.ClusterLoadAssignment) []types.Resource {
	return []types.Resource{listener(t, testListener, testRoute), routeTo(testRoute, c.GetName()), c, eds}
}

func twoPriorities(name string) *endpointv3.ClusterLoadAssignment {
	return cla(name,
		locality(0, 3, "z0", lbEndpoint(corev3.HealthStatus_HEALTHY, "198.18.0.10", 443)),
		locality(1, 1, "z1", lbEndpoint(corev3.HealthStatus_DRAINING, "198.18.0.11", 443)),
	)
}

func gotConfig(r result) bool { return r.cfg != nil }

// TestClient_ACKsAndDeliversLDSRDSCDSEDS verifies A27's chain: the client
// subscribes LDS, then RDS, CDS and EDS as each names the next, ACKs each
// valid response with its version and nonce, and delivers the complete
// configuration.
func TestClient_ACKsAndDeliversLDSRDSCDSEDS(t *testing.T) {
	e := newEnv(t, Options{})
	e.set("1", baseResources(t, edsCluster("c1"), twoPriorities("c1-eds"))...)
	for _, url := range typeOrder {
		ev := e.answer(url, "1")
		if ev.Kind != ACK || ev.Version != "1" || ev.Nonce == "" {
			t.Errorf("%s: got %+v, want an ACK of version 1 with the response's nonce", shortType(url), ev)
		}
	}
	r := e.config(gotConfig)
	cfg := r.cfg
	if cfg.Cluster != "c1" || !reflect.DeepEqual(cfg.Leaves, []string{"c1"}) || cfg.Aggregate() {
		t.Fatalf("cluster %q leaves %v, want c1 [c1]", cfg.Cluster, cfg.Leaves)
	}
	eds := cfg.Endpoints["c1-eds"]
	if eds == nil || len(eds.Priorities) != 2 {
		t.Fatalf("endpoints = %+v, want two priorities", eds)
	}
	p1 := eds.Priorities[1].Localities[0]
	if p1.Weight != 1 || p1.ID.Zone != "z1" || p1.Endpoints[0].HealthStatus != HealthDraining || p1.Endpoints[0].Addresses[0] != "198.18.0.11:443" {
		t.Errorf("priority 1 = %+v", p1)
	}
	if got := cfg.Clusters["c1"].IdleTimeout; got != time.Hour {
		t.Errorf("idle timeout = %v, want the 1 h default", got)
	}
	if got := string(cfg.LBPolicies["c1"]); got != `{"conform_round_robin":{}}` {
		t.Errorf("LB policy = %s, want round_robin", got)
	}
}

func withUpstream(t *testing.T, hpo *httpv3.HttpProtocolOptions) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) {
		c.UpstreamConfig = &corev3.TypedExtensionConfig{Name: "up", TypedConfig: anyOf(t, hpo)}
	}
}

func idle(d *durationpb.Duration) *httpv3.HttpProtocolOptions {
	return &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: d}}
}

// TestClient_IdleTimeoutRules verifies every rule of A75, "Reading the
// idle_timeout field in CDS", end to end: each CDS update is ACKed with its
// value (or the 1 h default) or NACKed with a detail naming the rule, and a
// NACK keeps the previously accepted cluster and version.
func TestClient_IdleTimeoutRules(t *testing.T) {
	e := newEnv(t, Options{})
	e.set("base", baseResources(t, edsCluster("c1", withUpstream(t, idle(durationpb.New(7*time.Second)))), twoPriorities("c1-eds"))...)
	e.answer(ClusterType, "base")
	e.config(gotConfig)
	lastGood := "base"
	cases := []struct {
		name   string
		mod    func(*clusterv3.Cluster)
		want   time.Duration // when ACKed
		detail string        // when NACKed
	}{
		{"upstream_config absent", func(*clusterv3.Cluster) {}, time.Hour, ""},
		{"not HttpProtocolOptions", func(c *clusterv3.Cluster) {
			c.UpstreamConfig = &corev3.TypedExtensionConfig{Name: "up", TypedConfig: anyOf(t, &corev3.HttpProtocolOptions{})}
		}, 0, "not type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"},
		{"valid 5s", withUpstream(t, idle(durationpb.New(5*time.Second))), 5 * time.Second, ""},
		{"common_http_protocol_options absent", withUpstream(t, &httpv3.HttpProtocolOptions{}), time.Hour, ""},
		{"valid 1.5s", withUpstream(t, idle(&durationpb.Duration{Seconds: 1, Nanos: 5e8})), 1500 * time.Millisecond, ""},
		{"idle_timeout unset", withUpstream(t, idle(nil)), time.Hour, ""},
		{"zero", withUpstream(t, idle(&durationpb.Duration{})), 0, ""},
		{"seconds -1", withUpstream(t, idle(&durationpb.Duration{Seconds: -1})), 0, "seconds -1 is outside [0, 315576000000]"},
		{"seconds at the maximum", withUpstream(t, idle(&durationpb.Duration{Seconds: 315576000000})), time.Duration(1<<63 - 1), ""},
		{"seconds above the maximum", withUpstream(t, idle(&durationpb.Duration{Seconds: 315576000001})), 0, "seconds 315576000001 is outside"},
		{"nanos -1", withUpstream(t, idle(&durationpb.Duration{Seconds: 1, Nanos: -1})), 0, "nanos -1 is outside [0, 999999999]"},
		{"nanos 1e9", withUpstream(t, idle(&durationpb.Duration{Nanos: 1e9})), 0, "nanos 1000000000 is outside"},
		{"nanos at the maximum", withUpstream(t, idle(&durationpb.Duration{Nanos: 999999999})), 999999999, ""},
	}
	for i, tc := range cases {
		v := fmt.Sprintf("v%d", i)
		e.set(v, baseResources(t, edsCluster("c1", tc.mod), twoPriorities("c1-eds"))...)
		ev := e.answer(ClusterType, v)
		if tc.detail != "" {
			if ev.Kind != NACK || ev.Version != lastGood || !strings.Contains(ev.Detail, tc.detail) {
				t.Errorf("%s: got %s version %q detail %q, want NACK keeping version %q with %q", tc.name, ev.Kind, ev.Version, ev.Detail, lastGood, tc.detail)
			}
			continue
		}
		if ev.Kind != ACK || ev.Version != v {
			t.Errorf("%s: got %s version %q (%s), want ACK of %q", tc.name, ev.Kind, ev.Version, ev.Detail, v)
			continue
		}
		e.config(func(r result) bool { return r.cfg != nil && r.cfg.Clusters["c1"].IdleTimeout == tc.want })
		lastGood = v
	}
}

// TestClient_NACKKeepsPreviousResources verifies A27's NACK: the rejected
// response changes nothing; the next valid one is used.
func TestClient_NACKKeepsPreviousResources(t *testing.T) {
	e := newEnv(t, Options{})
	e.set("1", baseResources(t, edsCluster("c1"), twoPriorities("c1-eds"))...)
	e.config(gotConfig)
	bad := cla("c1-eds", locality(0, 1, "z0", lbEndpoint(corev3.HealthStatus_HEALTHY, "198.18.0.20", 443,
		&corev3.Address{})))
	e.set("2", baseResources(t, edsCluster("c1"), bad)...)
	ev := e.answer(EndpointsType, "2")
	if ev.Kind != NACK || ev.Version != "1" || !strings.Contains(ev.Detail, "additional_addresses[0].address") {
		t.Fatalf("got %+v, want a NACK of version 2 naming additional_addresses[0], keeping version 1", ev)
	}
	good := cla("c1-eds", locality(0, 1, "z0", lbEndpoint(corev3.HealthStatus_HEALTHY, "198.18.0.30", 443)))
	e.set("3", baseResources(t, edsCluster("c1"), good)...)
	r := e.config(func(r result) bool {
		return r.cfg != nil && r.cfg.Endpoints["c1-eds"].Priorities[0].Localities[0].Endpoints[0].Addresses[0] == "198.18.0.30:443"
	})
	if r.cfg == nil {
		t.Fatal("no config after the valid update")
	}
}

// TestClient_AdditionalAddresses verifies A61, xDS Changes: an additional
// address with no address, or one that fails Endpoint.address's validation,
// rejects the EDS resource; valid ones follow the endpoint's address in
// order.
func TestClient_AdditionalAddresses(t *testing.T) {
	e := newEnv(t, Options{})
	valid := cla("c1-eds", locality(0, 1, "z0", lbEndpoint(corev3.HealthStatus_HEALTHY, "198.18.0.10", 443,
		sockAddr("fd00:c0f::10", 443), sockAddr("198.18.1.10", 8443))))
	e.set("1", baseResources(t, edsCluster("c1"), valid)...)
	if ev := e.answer(EndpointsType, "1"); ev.Kind != ACK {
		t.Fatalf("valid additional addresses: %+v", ev)
	}
	r := e.config(gotConfig)
	got := r.cfg.Endpoints["c1-eds"].Priorities[0].Localities[0].Endpoints[0].Addresses
	if want := []string{"198.18.0.10:443", "[fd00:c0f::10]:443", "198.18.1.10:8443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("addresses = %v, want %v", got, want)
	}
	for i, tc := range []struct {
		name   string
		extra  *corev3.Address
		detail string
	}{
		{"address unset", nil, "additional_addresses[0].address is unset"},
		{"no socket address", &corev3.Address{}, "additional_addresses[0].address: socket_address is unset"},
		{"empty host", sockAddr("", 443), "socket_address.address is empty"},
		{"host name", sockAddr("b1.invalid", 443), `socket_address.address "b1.invalid" is not an IPv4 or IPv6 address`},
		{"port above 65535", sockAddr("198.18.0.12", 70000), "port_value 70000 is above 65535"},
		{"named port", &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "198.18.0.12", PortSpecifier: &corev3.SocketAddress_NamedPort{NamedPort: "https"}}}}, "port_value is unset"},
	} {
		lb := lbEndpoint(corev3.HealthStatus_HEALTHY, "198.18.0.10", 443)
		lb.GetEndpoint().AdditionalAddresses = []*endpointv3.Endpoint_AdditionalAddress{{Address: tc.extra}}
		v := fmt.Sprintf("bad%d", i)
		e.set(v, baseResources(t, edsCluster("c1"), cla("c1-eds", locality(0, 1, "z0", lb)))...)
		if ev := e.answer(EndpointsType, v); ev.Kind != NACK || !strings.Contains(ev.Detail, tc.detail) {
			t.Errorf("%s: got %s %q, want NACK with %q", tc.name, ev.Kind, ev.Detail, tc.detail)
		}
	}
}

// TestClient_EDSRules verifies the rest of EDS validation: contiguous
// priorities, no duplicate address, unweighted localities ignored, and
// endpoints outside HEALTHY/UNKNOWN/DRAINING left out.
func TestClient_EDSRules(t *testing.T) {
	e := newEnv(t, Options{})
	gap := cla("c1-eds", locality(0, 1, "z0", lbEndpoint(0, "198.18.0.1", 1)), locality(2, 1, "z2", lbEndpoint(0, "198.18.0.2", 1)))
	e.set("gap", baseResources(t, edsCluster("c1"), gap)...)
	if ev := e.answer(EndpointsType, "gap"); ev.Kind != NACK || !strings.Contains(ev.Detail, "not contiguous") {
		t.Errorf("priority gap: %+v", ev)
	}
	dup := cla("c1-eds", locality(0, 1, "z0", lbEndpoint(0, "198.18.0.1", 1)), locality(0, 1, "z1", lbEndpoint(0, "198.18.0.3", 1, sockAddr("198.18.0.1", 1))))
	e.set("dup", baseResources(t, edsCluster("c1"), dup)...)
	if ev := e.answer(EndpointsType, "dup"); ev.Kind != NACK || !strings.Contains(ev.Detail, "198.18.0.1:1 appears twice") {
		t.Errorf("duplicate address: %+v", ev)
	}
	unweighted := locality(0, 0, "zu", lbEndpoint(0, "198.18.0.9", 1))
	mixed := cla("c1-eds", unweighted, locality(0, 2, "z0",
		lbEndpoint(corev3.HealthStatus_UNHEALTHY, "198.18.0.4", 1),
		lbEndpoint(corev3.HealthStatus_UNKNOWN, "198.18.0.5", 1)))
	e.set("ok", baseResources(t, edsCluster("c1"), mixed)...)
	if ev := e.answer(EndpointsType, "ok"); ev.Kind != ACK {
		t.Fatalf("valid EDS: %+v", ev)
	}
	r := e.config(gotConfig)
	ls := r.cfg.Endpoints["c1-eds"].Priorities[0].Localities
	if len(ls) != 1 || len(ls[0].Endpoints) != 1 || ls[0].Endpoints[0].Addresses[0] != "198.18.0.5:1" {
		t.Errorf("localities = %+v, want z0 with only the UNKNOWN endpoint", ls)
	}
}

// TestClient_AggregateGraph verifies A37's example end to end: A → [B, C],
// C → [D, E], E a LOGICAL_DNS cluster, B also under C (de-duplicated):
// leaves [B, D, E], every cluster and EDS resource subscribed.
func TestClient_AggregateGraph(t *testing.T) {
	e := newEnv(t, Options{})
	e.set("1", listener(t, testListener, testRoute), routeTo(testRoute, "A"),
		aggCluster(t, "A", "B", "C"), aggCluster(t, "C", "D", "B", "E"),
		edsCluster("B"), edsCluster("D"), dnsCluster("E", "backend.lab", 443),
		twoPriorities("B-eds"), cla("D-eds", locality(0, 1, "z", lbEndpoint(0, "198.18.0.40", 443))))
	r := e.config(gotConfig)
	if want := []string{"B", "D", "E"}; !reflect.DeepEqual(r.cfg.Leaves, want) {
		t.Errorf("leaves = %v, want %v", r.cfg.Leaves, want)
	}
	if !r.cfg.Aggregate() {
		t.Error("Aggregate() = false for an aggregate root")
	}
	if e := r.cfg.Clusters["E"]; e.Kind != KindLogicalDNS || e.DNSHost != "backend.lab" || e.DNSPort != 443 {
		t.Errorf("E = %+v", e)
	}
	if len(r.cfg.Endpoints) != 2 || r.cfg.Endpoints["B-eds"] == nil || r.cfg.Endpoints["D-eds"] == nil {
		t.Errorf("endpoints = %v, want B-eds and D-eds", r.cfg.Endpoints)
	}
}

// TestClient_AggregateDepthLimit verifies A37's depth limit end to end: a
// leaf at depth 15 resolves; at depth 16 the watcher gets an error.
func TestClient_AggregateDepthLimit(t *testing.T) {
	chain := func(n int) []types.Resource {
		res := []types.Resource{listener(t, testListener, testRoute), routeTo(testRoute, "a0")}
		for i := range n {
			res = append(res, aggCluster(t, fmt.Sprintf("a%d", i), fmt.Sprintf("a%d", i+1)))
		}
		res = append(res, edsCluster(fmt.Sprintf("a%d", n)), twoPriorities(fmt.Sprintf("a%d-eds", n)))
		return res
	}
	e := newEnv(t, Options{})
	e.set("15", chain(15)...)
	if r := e.config(gotConfig); !reflect.DeepEqual(r.cfg.Leaves, []string{"a15"}) {
		t.Fatalf("leaves = %v, want [a15]", r.cfg.Leaves)
	}
	e.set("16", chain(16)...)
	r := e.config(func(r result) bool { return r.err != nil })
	if !strings.Contains(r.err.Error(), "depth limit of 16") {
		t.Errorf("err = %v, want the depth limit", r.err)
	}
}

func pickFirstPolicy(t *testing.T, shuffle bool) *clusterv3.LoadBalancingPolicy {
	return &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{{
		TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "pf", TypedConfig: anyOf(t, &pickfirstv3.PickFirst{ShuffleAddressList: shuffle})},
	}}}
}

// TestClient_LBPolicyFromUnderlyingClusters verifies A75: the leaves under
// an aggregate keep their own LB policy and the aggregate's is ignored;
// with the backward-compatibility switch they take the aggregate's.
func TestClient_LBPolicyFromUnderlyingClusters(t *testing.T) {
	res := func() []types.Resource {
		agg := aggCluster(t, "A", "B", "C")
		agg.LbPolicy = clusterv3.Cluster_RING_HASH
		return []types.Resource{listener(t, testListener, testRoute), routeTo(testRoute, "A"), agg,
			edsCluster("B"), edsCluster("C", func(c *clusterv3.Cluster) { c.LoadBalancingPolicy = pickFirstPolicy(t, true) }),
			twoPriorities("B-eds"), cla("C-eds", locality(0, 1, "z", lbEndpoint(0, "198.18.0.50", 443)))}
	}
	for _, tc := range []struct {
		compat bool
		want   map[string]string
	}{
		{false, map[string]string{"B": `{"conform_round_robin":{}}`, "C": `{"conform_pick_first":{"shuffleAddressList":true}}`}},
		{true, map[string]string{"B": `{"conform_ring_hash":{}}`, "C": `{"conform_ring_hash":{}}`}},
	} {
		e := newEnv(t, Options{AggregateClusterBackwardCompat: tc.compat})
		e.set("1", res()...)
		r := e.config(gotConfig)
		got := map[string]string{}
		for k, v := range r.cfg.LBPolicies {
			got[k] = string(v)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("backward compat %v: LB policies = %v, want %v", tc.compat, got, tc.want)
		}
	}
}

// TestClient_ListenerDoesNotExist verifies that a full-state LDS response
// without the listener is reported as ErrNotExist.
func TestClient_ListenerDoesNotExist(t *testing.T) {
	e := newEnv(t, Options{})
	e.set("1", listener(t, "other", testRoute), routeTo(testRoute, "c1"))
	r := e.config(func(r result) bool { return r.err != nil })
	if !errors.Is(r.err, ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", r.err)
	}
}

// TestClient_OutlierDetectionAndOverrideHostStatus verifies the A50 mapping
// (enforcing_success_rate 0 disables success-rate ejection; failure
// percentage only with a non-zero enforcement) and A55's override host
// statuses.
func TestClient_OutlierDetectionAndOverrideHostStatus(t *testing.T) {
	e := newEnv(t, Options{})
	c := edsCluster("c1", func(c *clusterv3.Cluster) {
		c.OutlierDetection = &clusterv3.OutlierDetection{
			Interval:                   durationpb.New(2 * time.Second),
			EnforcingSuccessRate:       wrapperspb.UInt32(0),
			EnforcingFailurePercentage: wrapperspb.UInt32(100),
			FailurePercentageThreshold: wrapperspb.UInt32(50),
		}
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{OverrideHostStatus: &corev3.HealthStatusSet{
			Statuses: []corev3.HealthStatus{corev3.HealthStatus_DRAINING, corev3.HealthStatus_UNHEALTHY, corev3.HealthStatus_HEALTHY}}}
	})
	e.set("1", baseResources(t, c, twoPriorities("c1-eds"))...)
	r := e.config(gotConfig)
	var od map[string]any
	if err := json.Unmarshal(r.cfg.Clusters["c1"].OutlierDetection, &od); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"interval": "2s", "failurePercentageEjection": map[string]any{"enforcementPercentage": 100.0, "threshold": 50.0}}
	if !reflect.DeepEqual(od, want) {
		t.Errorf("outlier detection = %v, want %v", od, want)
	}
	if got := r.cfg.Clusters["c1"].OverrideHostStatus; !reflect.DeepEqual(got, []string{"HEALTHY", "DRAINING"}) {
		t.Errorf("override host status = %v", got)
	}
	bad := edsCluster("c1", func(c *clusterv3.Cluster) {
		c.OutlierDetection = &clusterv3.OutlierDetection{MaxEjectionPercent: wrapperspb.UInt32(101)}
	})
	e.set("2", baseResources(t, bad, twoPriorities("c1-eds"))...)
	if ev := e.answer(ClusterType, "2"); ev.Kind != NACK || !strings.Contains(ev.Detail, "max_ejection_percent 101") {
		t.Errorf("got %+v, want a NACK for max_ejection_percent", ev)
	}
}

// TestClient_RouteHashPolicyReachesRingHash verifies the default route's
// first header hash policy (A42, Hash Policy; a binary header skipped) is
// the hash header of every ring_hash leaf, and leaves other policies alone.
func TestClient_RouteHashPolicyReachesRingHash(t *testing.T) {
	rt := routeTo(testRoute, "A")
	rt.VirtualHosts[0].Routes[0].GetRoute().HashPolicy = []*routev3.RouteAction_HashPolicy{
		{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "x-skip-bin"}}},
		{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "X-Key"}}},
	}
	agg := aggCluster(t, "A", "B", "C")
	res := []types.Resource{listener(t, testListener, testRoute), rt, agg,
		edsCluster("B", func(c *clusterv3.Cluster) { c.LbPolicy = clusterv3.Cluster_RING_HASH }), edsCluster("C"),
		twoPriorities("B-eds"), cla("C-eds", locality(0, 1, "z", lbEndpoint(0, "198.18.0.50", 443)))}
	e := newEnv(t, Options{})
	e.set("1", res...)
	r := e.config(gotConfig)
	if r.cfg.HashHeader != "x-key" {
		t.Errorf("hash header %q, want x-key", r.cfg.HashHeader)
	}
	got := map[string]string{}
	for k, v := range r.cfg.LBPolicies {
		got[k] = string(v)
	}
	want := map[string]string{"B": `{"conform_ring_hash":{"requestHashHeader":"x-key"}}`, "C": `{"conform_round_robin":{}}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LB policies = %v, want %v", got, want)
	}
}
