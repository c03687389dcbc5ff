package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	udpav1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	pickfirstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/conformlab/conform/reference/pickfirst"
	"github.com/conformlab/conform/reference/ringhash"
	"github.com/conformlab/conform/reference/roundrobin"
)

// The load_balancing_policy extensions the registry converts (A52, "xDS LB
// Policy Registry"; A62, "pick_first via xDS").
const (
	ringHashExt    = "type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash"
	roundRobinExt  = "type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"
	pickFirstExt   = "type.googleapis.com/envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst"
	wrrLocalityExt = "type.googleapis.com/envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality"
	xdsTypedStruct = "type.googleapis.com/xds.type.v3.TypedStruct"
	udpaTypedStrct = "type.googleapis.com/udpa.type.v1.TypedStruct"

	// maxLBPolicyDepth is A52's recursion limit: configurations needing more
	// than 16 levels are invalid.
	maxLBPolicyDepth = 16
	// maxRingSize is A42's upper bound on ring sizes in xDS.
	maxRingSize = 8 * 1024 * 1024
)

// errUnsupported marks a policy the registry skips (A52: "Any entry not in
// the above list is unsupported and will be skipped").
var errUnsupported = errors.New("unsupported policy")

// convertLBPolicy returns the cluster's LB policy as one LoadBalancingConfig
// object naming a reference policy. load_balancing_policy, when present,
// wins over lb_policy (A52, Proposal). The converted config is then parsed by
// the policy's own parser: A52 NACKs a config the gRPC LB policy registry
// cannot parse.
func convertLBPolicy(c *clusterv3.Cluster) (json.RawMessage, error) {
	var (
		name string
		cfg  any
		err  error
	)
	if lbp := c.GetLoadBalancingPolicy(); lbp != nil {
		name, cfg, err = convertPolicyList(lbp, 0)
		if err != nil {
			return nil, fmt.Errorf("load_balancing_policy: %v", err)
		}
	} else {
		switch c.GetLbPolicy() {
		case clusterv3.Cluster_ROUND_ROBIN:
			name, cfg = roundrobin.Name, map[string]any{}
		case clusterv3.Cluster_RING_HASH:
			rh := c.GetRingHashLbConfig()
			if rh.GetHashFunction() != clusterv3.Cluster_RingHashLbConfig_XX_HASH {
				return nil, fmt.Errorf("ring_hash_lb_config.hash_function %v is not XX_HASH", rh.GetHashFunction())
			}
			name = ringhash.Name
			if cfg, err = ringConfig(rh.GetMinimumRingSize(), rh.GetMaximumRingSize()); err != nil {
				return nil, fmt.Errorf("ring_hash_lb_config: %v", err)
			}
		default:
			return nil, fmt.Errorf("lb_policy %v is not supported", c.GetLbPolicy())
		}
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := parseWithRegistry(name, js); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]json.RawMessage{name: js})
}

// parseWithRegistry has the balancer registry parse a converted config.
func parseWithRegistry(name string, js []byte) error {
	b := balancer.Get(name)
	if b == nil {
		return fmt.Errorf("LB policy %q is not registered", name)
	}
	if p, ok := b.(balancer.ConfigParser); ok {
		if _, err := p.ParseConfig(js); err != nil {
			return fmt.Errorf("LB policy %q rejects the converted config %s: %v", name, js, err)
		}
	}
	return nil
}

// convertPolicyList is A52's convertToServiceConfig: the first supported
// policy of the list, converted.
func convertPolicyList(lbp *clusterv3.LoadBalancingPolicy, depth int) (string, any, error) {
	if depth >= maxLBPolicyDepth {
		return "", nil, fmt.Errorf("LB policy config nests more than %d levels", maxLBPolicyDepth)
	}
	var skipped []string
	for _, p := range lbp.GetPolicies() {
		tc := p.GetTypedExtensionConfig().GetTypedConfig()
		name, cfg, err := convertPolicy(tc, depth)
		if errors.Is(err, errUnsupported) {
			skipped = append(skipped, tc.GetTypeUrl())
			continue
		}
		return name, cfg, err
	}
	return "", nil, fmt.Errorf("no supported policy (skipped %v)", skipped)
}

func convertPolicy(tc *anypb.Any, depth int) (string, any, error) {
	switch tc.GetTypeUrl() {
	case roundRobinExt:
		return roundrobin.Name, map[string]any{}, nil
	case ringHashExt:
		rh := &ringhashv3.RingHash{}
		if err := tc.UnmarshalTo(rh); err != nil {
			return "", nil, fmt.Errorf("cannot unmarshal RingHash: %v", err)
		}
		if hf := rh.GetHashFunction(); hf != ringhashv3.RingHash_DEFAULT_HASH && hf != ringhashv3.RingHash_XX_HASH {
			return "", nil, fmt.Errorf("RingHash.hash_function %v is not XX_HASH", hf)
		}
		cfg, err := ringConfig(rh.GetMinimumRingSize(), rh.GetMaximumRingSize())
		if err != nil {
			return "", nil, fmt.Errorf("RingHash: %v", err)
		}
		return ringhash.Name, cfg, nil
	case pickFirstExt:
		pf := &pickfirstv3.PickFirst{}
		if err := tc.UnmarshalTo(pf); err != nil {
			return "", nil, fmt.Errorf("cannot unmarshal PickFirst: %v", err)
		}
		// A62, pick_first via xDS: shuffle_address_list becomes the
		// policy's shuffleAddressList.
		return pickfirst.Name, map[string]any{"shuffleAddressList": pf.GetShuffleAddressList()}, nil
	case wrrLocalityExt:
		// The locality-picking layer is the tree's weighted_target; the
		// endpoint-picking policy inside is what each locality runs.
		w := &wrrlocalityv3.WrrLocality{}
		if err := tc.UnmarshalTo(w); err != nil {
			return "", nil, fmt.Errorf("cannot unmarshal WrrLocality: %v", err)
		}
		name, cfg, err := convertPolicyList(w.GetEndpointPickingPolicy(), depth+1)
		if err != nil {
			return "", nil, fmt.Errorf("WrrLocality.endpoint_picking_policy: %v", err)
		}
		return name, cfg, nil
	case xdsTypedStruct, udpaTypedStrct:
		var (
			typeURL string
			value   any
		)
		if tc.GetTypeUrl() == xdsTypedStruct {
			ts := &xdstypev3.TypedStruct{}
			if err := tc.UnmarshalTo(ts); err != nil {
				return "", nil, fmt.Errorf("cannot unmarshal TypedStruct: %v", err)
			}
			typeURL, value = ts.GetTypeUrl(), ts.GetValue().AsMap()
		} else {
			ts := &udpav1.TypedStruct{}
			if err := tc.UnmarshalTo(ts); err != nil {
				return "", nil, fmt.Errorf("cannot unmarshal TypedStruct: %v", err)
			}
			typeURL, value = ts.GetTypeUrl(), ts.GetValue().AsMap()
		}
		name := typeURL[strings.LastIndex(typeURL, "/")+1:]
		if balancer.Get(name) == nil {
			return "", nil, errUnsupported
		}
		return name, value, nil
	}
	return "", nil, errUnsupported
}

// ringConfig builds ring_hash's config from xDS ring sizes (A42, "Changes to
// the xDS Client"): sizes above 8M or a minimum above the maximum are
// invalid.
func ringConfig(minSize, maxSize *wrapperspb.UInt64Value) (map[string]any, error) {
	cfg := map[string]any{}
	if minSize != nil {
		if minSize.GetValue() > maxRingSize {
			return nil, fmt.Errorf("minimum_ring_size %d is above %d", minSize.GetValue(), maxRingSize)
		}
		cfg["minRingSize"] = minSize.GetValue()
	}
	if maxSize != nil {
		if maxSize.GetValue() > maxRingSize {
			return nil, fmt.Errorf("maximum_ring_size %d is above %d", maxSize.GetValue(), maxRingSize)
		}
		cfg["maxRingSize"] = maxSize.GetValue()
	}
	if minSize != nil && maxSize != nil && minSize.GetValue() > maxSize.GetValue() {
		return nil, fmt.Errorf("minimum_ring_size %d is above maximum_ring_size %d", minSize.GetValue(), maxSize.GetValue())
	}
	return cfg, nil
}

// withRequestHashHeader has a ring_hash policy (one LoadBalancingConfig
// object) hash header h: the route's hash policy (A42, Hash Policy) given
// to the reference's ring_hash as its requestHashHeader (A76), which hashes
// the header's values, joined with ",", with XXH64 as A42's header policy
// does. Any other policy is returned as it is.
func withRequestHashHeader(lb json.RawMessage, h string) json.RawMessage {
	var m map[string]map[string]any
	if err := json.Unmarshal(lb, &m); err != nil {
		return lb
	}
	cfg, ok := m[ringhash.Name]
	if !ok || len(m) != 1 {
		return lb
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["requestHashHeader"] = h
	out, err := json.Marshal(map[string]any{ringhash.Name: cfg})
	if err != nil {
		return lb
	}
	return out
}
