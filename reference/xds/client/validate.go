package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

const hcmType = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

// parseListener validates an LDS resource (A27, "Listener Proto"): it must be
// an API listener holding an HttpConnectionManager whose route configuration
// comes from ADS (rds with an ads or self config source) or is inline.
func parseListener(a *anypb.Any) (string, *Listener, error) {
	l := &listenerv3.Listener{}
	if err := a.UnmarshalTo(l); err != nil {
		return "", nil, fmt.Errorf("cannot unmarshal Listener: %v", err)
	}
	name := l.GetName()
	api := l.GetApiListener().GetApiListener()
	if api == nil {
		return name, nil, errors.New("api_listener is unset")
	}
	if api.GetTypeUrl() != hcmType {
		return name, nil, fmt.Errorf("api_listener is %s, not HttpConnectionManager", api.GetTypeUrl())
	}
	hcm := &hcmv3.HttpConnectionManager{}
	if err := api.UnmarshalTo(hcm); err != nil {
		return name, nil, fmt.Errorf("cannot unmarshal HttpConnectionManager: %v", err)
	}
	out := &Listener{Name: name}
	switch rs := hcm.GetRouteSpecifier().(type) {
	case *hcmv3.HttpConnectionManager_Rds:
		cs := rs.Rds.GetConfigSource()
		if cs.GetAds() == nil && cs.GetSelf() == nil {
			return name, nil, errors.New("rds.config_source is neither ads nor self")
		}
		if rs.Rds.GetRouteConfigName() == "" {
			return name, nil, errors.New("rds.route_config_name is empty")
		}
		out.RouteConfigName = rs.Rds.GetRouteConfigName()
	case *hcmv3.HttpConnectionManager_RouteConfig:
		rc, err := routeConfig(rs.RouteConfig)
		if err != nil {
			return name, nil, fmt.Errorf("route_config: %v", err)
		}
		out.Inline = rc
	default:
		return name, nil, errors.New("HttpConnectionManager has neither rds nor route_config")
	}
	return name, out, nil
}

// parseRouteConfig validates an RDS resource.
func parseRouteConfig(a *anypb.Any) (string, *RouteConfig, error) {
	rc := &routev3.RouteConfiguration{}
	if err := a.UnmarshalTo(rc); err != nil {
		return "", nil, fmt.Errorf("cannot unmarshal RouteConfiguration: %v", err)
	}
	out, err := routeConfig(rc)
	return rc.GetName(), out, err
}

func routeConfig(rc *routev3.RouteConfiguration) (*RouteConfig, error) {
	out := &RouteConfig{Name: rc.GetName()}
	for i, vh := range rc.GetVirtualHosts() {
		if len(vh.GetDomains()) == 0 {
			return nil, fmt.Errorf("virtual_hosts[%d] has no domains", i)
		}
		v := VirtualHost{Name: vh.GetName(), Domains: vh.GetDomains()}
		for _, r := range vh.GetRoutes() {
			var route Route
			switch m := r.GetMatch().GetPathSpecifier().(type) {
			case *routev3.RouteMatch_Prefix:
				p := m.Prefix
				route.Prefix = &p
			case *routev3.RouteMatch_Path:
				p := m.Path
				route.Path = &p
			default:
				route.Unsupported = "path matcher is neither prefix nor path"
			}
			switch act := r.GetAction().(type) {
			case *routev3.Route_Route:
				if c := act.Route.GetCluster(); c != "" {
					route.Cluster = c
				} else if route.Unsupported == "" {
					route.Unsupported = "route action does not name a single cluster"
				}
				route.HashHeader = hashHeader(act.Route.GetHashPolicy())
			default:
				if route.Unsupported == "" {
					route.Unsupported = "action is not a route action"
				}
			}
			v.Routes = append(v.Routes, route)
		}
		out.VirtualHosts = append(out.VirtualHosts, v)
	}
	return out, nil
}

// parseEndpoints validates an EDS resource (A27, "ClusterLoadAssignment
// Proto"; A61, "xDS Changes": each additional_addresses entry must have an
// address, validated like Endpoint.address). Localities with no weight are
// ignored; priorities must be contiguous from 0; an address may appear only
// once in the resource.
func parseEndpoints(a *anypb.Any) (string, *Endpoints, error) {
	cla := &endpointv3.ClusterLoadAssignment{}
	if err := a.UnmarshalTo(cla); err != nil {
		return "", nil, fmt.Errorf("cannot unmarshal ClusterLoadAssignment: %v", err)
	}
	name := cla.GetClusterName()
	byPriority := map[uint32][]Locality{}
	var maxPriority uint32
	seen := map[string]bool{}
	seenLocality := map[uint32]map[LocalityID]bool{}
	for i, le := range cla.GetEndpoints() {
		w := le.GetLoadBalancingWeight()
		if w == nil || w.GetValue() == 0 {
			continue // A27: a locality without a weight is ignored.
		}
		l := Locality{Weight: w.GetValue()}
		if loc := le.GetLocality(); loc != nil {
			l.ID = LocalityID{Region: loc.GetRegion(), Zone: loc.GetZone(), SubZone: loc.GetSubZone()}
		}
		p := le.GetPriority()
		if seenLocality[p] == nil {
			seenLocality[p] = map[LocalityID]bool{}
		}
		if seenLocality[p][l.ID] {
			return name, nil, fmt.Errorf("endpoints[%d]: locality %s appears twice in priority %d", i, l.ID, p)
		}
		seenLocality[p][l.ID] = true
		for j, lb := range le.GetLbEndpoints() {
			e, err := endpoint(lb)
			if err != nil {
				return name, nil, fmt.Errorf("endpoints[%d].lb_endpoints[%d]: %v", i, j, err)
			}
			if e == nil {
				continue
			}
			for _, addr := range e.Addresses {
				if seen[addr] {
					return name, nil, fmt.Errorf("endpoints[%d].lb_endpoints[%d]: address %s appears twice in the resource", i, j, addr)
				}
				seen[addr] = true
			}
			l.Endpoints = append(l.Endpoints, *e)
		}
		byPriority[p] = append(byPriority[p], l)
		maxPriority = max(maxPriority, p)
	}
	out := &Endpoints{Name: name}
	if len(byPriority) == 0 {
		return name, out, nil
	}
	if int(maxPriority)+1 != len(byPriority) {
		return name, nil, fmt.Errorf("priorities are not contiguous: %d distinct priorities, highest %d", len(byPriority), maxPriority)
	}
	for p := uint32(0); p <= maxPriority; p++ {
		out.Priorities = append(out.Priorities, Priority{Localities: byPriority[p]})
	}
	return name, out, nil
}

// endpoint validates one LbEndpoint. It returns nil for an endpoint whose
// health status the client does not use (A27: HEALTHY and UNKNOWN; A55 adds
// DRAINING).
func endpoint(lb *endpointv3.LbEndpoint) (*Endpoint, error) {
	ep := lb.GetEndpoint()
	if ep == nil {
		return nil, errors.New("endpoint is unset")
	}
	first, err := socketAddress(ep.GetAddress())
	if err != nil {
		return nil, fmt.Errorf("endpoint.address: %v", err)
	}
	e := &Endpoint{Addresses: []string{first}, Weight: 1}
	// A61, xDS Changes: an additional address without an address rejects
	// the resource; one with an address is validated like Endpoint.address.
	for k, aa := range ep.GetAdditionalAddresses() {
		if aa.GetAddress() == nil {
			return nil, fmt.Errorf("endpoint.additional_addresses[%d].address is unset", k)
		}
		addr, err := socketAddress(aa.GetAddress())
		if err != nil {
			return nil, fmt.Errorf("endpoint.additional_addresses[%d].address: %v", k, err)
		}
		e.Addresses = append(e.Addresses, addr)
	}
	if w := lb.GetLoadBalancingWeight(); w != nil {
		if w.GetValue() == 0 {
			return nil, errors.New("load_balancing_weight is 0")
		}
		e.Weight = w.GetValue()
	}
	switch lb.GetHealthStatus() {
	case corev3.HealthStatus_UNKNOWN:
		e.HealthStatus = HealthUnknown
	case corev3.HealthStatus_HEALTHY:
		e.HealthStatus = HealthHealthy
	case corev3.HealthStatus_DRAINING:
		e.HealthStatus = HealthDraining
	default:
		return nil, nil
	}
	return e, nil
}

// socketAddress validates an endpoint's Address (A27, ClusterLoadAssignment
// Proto: a socket_address whose address is an IPv4 or IPv6 address, with a
// port_value) and returns it as "host:port".
func socketAddress(a *corev3.Address) (string, error) {
	if a == nil {
		return "", errors.New("unset")
	}
	sa := a.GetSocketAddress()
	if sa == nil {
		return "", errors.New("socket_address is unset")
	}
	if sa.GetAddress() == "" {
		return "", errors.New("socket_address.address is empty")
	}
	if _, err := netip.ParseAddr(sa.GetAddress()); err != nil {
		return "", fmt.Errorf("socket_address.address %q is not an IPv4 or IPv6 address", sa.GetAddress())
	}
	pv, ok := sa.GetPortSpecifier().(*corev3.SocketAddress_PortValue)
	if !ok {
		return "", errors.New("socket_address.port_value is unset")
	}
	if pv.PortValue > 65535 {
		return "", fmt.Errorf("socket_address.port_value %d is above 65535", pv.PortValue)
	}
	return net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(pv.PortValue))), nil
}

// hashHeader is the header of the first header hash policy that can give a
// hash, lower-cased, or "". A42, Hash Policy: gRPC supports header policies
// (and channel-id ones, which the reference does not implement); binary
// ("-bin") headers are skipped as A28 skips them. Only the first header
// policy is kept: the reference's ring_hash hashes one header, as A76's
// requestHashHeader does; a route with more gets the first one's hash.
func hashHeader(hps []*routev3.RouteAction_HashPolicy) string {
	for _, hp := range hps {
		h := strings.ToLower(hp.GetHeader().GetHeaderName())
		if h != "" && !strings.HasSuffix(h, "-bin") {
			return h
		}
	}
	return ""
}
