package client

import (
	"strings"
	"testing"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func policies(t *testing.T, ms ...proto.Message) *clusterv3.LoadBalancingPolicy {
	p := &clusterv3.LoadBalancingPolicy{}
	for _, m := range ms {
		p.Policies = append(p.Policies, &clusterv3.LoadBalancingPolicy_Policy{TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "x", TypedConfig: anyOf(t, m)}})
	}
	return p
}

// TestConvertLBPolicy verifies A52's registry (first supported policy,
// unsupported ones skipped, WrrLocality unwrapped, TypedStruct by registered
// name, recursion limit), A62's PickFirst and A42's ring sizes, and that
// load_balancing_policy wins over lb_policy.
func TestConvertLBPolicy(t *testing.T) {
	nest := func(depth int) *clusterv3.LoadBalancingPolicy {
		p := policies(t, &roundrobinv3.RoundRobin{})
		for range depth {
			p = policies(t, &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: p})
		}
		return p
	}
	st, _ := structpb.NewStruct(map[string]any{"shuffleAddressList": true})
	for _, tc := range []struct {
		name string
		mod  func(*clusterv3.Cluster)
		want string // JSON, or "!" + error substring
	}{
		{"default lb_policy", func(*clusterv3.Cluster) {}, `{"conform_round_robin":{}}`},
		{"lb_policy RING_HASH", func(c *clusterv3.Cluster) {
			c.LbPolicy = clusterv3.Cluster_RING_HASH
			c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(10), MaximumRingSize: wrapperspb.UInt64(20)}}
		}, `{"conform_ring_hash":{"maxRingSize":20,"minRingSize":10}}`},
		{"lb_policy LEAST_REQUEST", func(c *clusterv3.Cluster) { c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST }, "!lb_policy LEAST_REQUEST is not supported"},
		{"load_balancing_policy wins", func(c *clusterv3.Cluster) {
			c.LbPolicy = clusterv3.Cluster_RING_HASH
			c.LoadBalancingPolicy = pickFirstPolicy(t, false)
		}, `{"conform_pick_first":{"shuffleAddressList":false}}`},
		{"unsupported skipped", func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = policies(t, &leastrequestv3.LeastRequest{}, &ringhashv3.RingHash{})
		}, `{"conform_ring_hash":{}}`},
		{"nothing supported", func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = policies(t, &leastrequestv3.LeastRequest{})
		}, "!no supported policy"},
		{"ring too big", func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = policies(t, &ringhashv3.RingHash{MaximumRingSize: wrapperspb.UInt64(8*1024*1024 + 1)})
		}, "!maximum_ring_size 8388609 is above"},
		{"min above max", func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = policies(t, &ringhashv3.RingHash{MinimumRingSize: wrapperspb.UInt64(30), MaximumRingSize: wrapperspb.UInt64(20)})
		}, "!minimum_ring_size 30 is above maximum_ring_size 20"},
		{"murmur", func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = policies(t, &ringhashv3.RingHash{HashFunction: ringhashv3.RingHash_MURMUR_HASH_2})
		}, "!is not XX_HASH"},
		{"wrr_locality", func(c *clusterv3.Cluster) { c.LoadBalancingPolicy = nest(1) }, `{"conform_round_robin":{}}`},
		{"15 levels", func(c *clusterv3.Cluster) { c.LoadBalancingPolicy = nest(15) }, `{"conform_round_robin":{}}`},
		{"16 levels", func(c *clusterv3.Cluster) { c.LoadBalancingPolicy = nest(16) }, "!more than 16 levels"},
		{"typed struct, registered", func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = policies(t, &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/conform_pick_first", Value: st})
		}, `{"conform_pick_first":{"shuffleAddressList":true}}`},
		{"typed struct, unregistered", func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = policies(t, &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/myorg.Nope", Value: st}, &roundrobinv3.RoundRobin{})
		}, `{"conform_round_robin":{}}`},
	} {
		_, c, err := parseCluster(anyOf(t, edsCluster("c", tc.mod)))
		if strings.HasPrefix(tc.want, "!") {
			if err == nil || !strings.Contains(err.Error(), tc.want[1:]) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want[1:])
			}
			continue
		}
		if err != nil || string(c.LBPolicy) != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.name, lbOf(c), err, tc.want)
		}
	}
}

func lbOf(c *Cluster) string {
	if c == nil {
		return "<nil>"
	}
	return string(c.LBPolicy)
}
