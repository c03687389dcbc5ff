package trace

import (
	"sort"
	"time"
)

// Lane names the thread of events an event belongs to, so that comparison
// can match events per lane (DESIGN.md, "Trace format"). The first rule that
// applies decides:
//
//	"rpc:<id>"          the event names an RPC (rpc-start, pick, rpc-result, rpc-served)
//	"subchannel:<id>"   it names a subchannel (subchannel-*)
//	"policy:<path>"     it names a policy, or is a policy-level kind without one
//	                    (balancer-state, resolve-now, exit-idle, timer-*; root: "policy:")
//	"addr:<ip:port>"    it names an address (capture, accept, preface, fault-*, health-set)
//	"backend:<name>"    it names a backend only (backend-down, backend-up)
//	"channel"           channel-state
//	"resolver"          resolver-update, resolver-error, config-update
//	"xds:<type>"        xds-request, per resource type: LDS, RDS, CDS, EDS
//	                    (another type: its type URL)
//	""                  anything else (note, log, stall): no lane
func Lane(e Event) string {
	switch {
	case e.RPC != "":
		return "rpc:" + e.RPC
	case e.Subchannel != "":
		return "subchannel:" + e.Subchannel
	case e.Policy != "" || policyKinds[e.Kind]:
		return "policy:" + e.Policy
	case e.Addr != "":
		return "addr:" + e.Addr
	case e.Backend != "":
		return "backend:" + e.Backend
	case e.Kind == KindChannelState:
		return "channel"
	case e.Kind == KindResolverUpdate || e.Kind == KindResolverError || e.Kind == KindConfigUpdate || e.Kind == KindDNSQuery:
		return "resolver"
	case e.Kind == KindXDSRequest:
		return "xds:" + xdsType(e.TypeURL)
	}
	return ""
}

// xdsTypes abbreviates the four resource types gRPC reads (A27).
var xdsTypes = map[string]string{
	"type.googleapis.com/envoy.config.listener.v3.Listener":              "LDS",
	"type.googleapis.com/envoy.config.route.v3.RouteConfiguration":       "RDS",
	"type.googleapis.com/envoy.config.cluster.v3.Cluster":                "CDS",
	"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment": "EDS",
}

func xdsType(url string) string {
	if t, ok := xdsTypes[url]; ok {
		return t
	}
	return url
}

var policyKinds = setOf([]Kind{
	KindBalancerState, KindResolveNow, KindExitIdle, KindTimerStart, KindTimerFire, KindTimerStop,
})

// Pred selects events.
type Pred func(Event) bool

// Select returns the events of evs that satisfy every pred, in order.
func Select(evs []Event, preds ...Pred) []Event {
	var out []Event
	for _, e := range evs {
		if all(e, preds) {
			out = append(out, e)
		}
	}
	return out
}

func all(e Event, preds []Pred) bool {
	for _, p := range preds {
		if !p(e) {
			return false
		}
	}
	return true
}

// OfKind selects events of any of the kinds ks.
func OfKind(ks ...Kind) Pred {
	set := setOf(ks)
	return func(e Event) bool { return set[e.Kind] }
}

// FromSource selects events from any of the sources ss.
func FromSource(ss ...Source) Pred {
	set := setOf(ss)
	return func(e Event) bool { return set[e.Source] }
}

// InLane selects events whose Lane is lane.
func InLane(lane string) Pred {
	return func(e Event) bool { return Lane(e) == lane }
}

// Window returns the events with from <= T < to, as a subslice of evs,
// which must be in time order (as Read returns them).
func Window(evs []Event, from, to time.Duration) []Event {
	i := sort.Search(len(evs), func(i int) bool { return evs[i].T >= from })
	j := sort.Search(len(evs), func(j int) bool { return evs[j].T >= to })
	if j < i {
		j = i
	}
	return evs[i:j]
}

// ByLane groups events by Lane, each group in time order; events with no
// lane are left out.
func ByLane(evs []Event) map[string][]Event {
	m := map[string][]Event{}
	for _, e := range evs {
		if l := Lane(e); l != "" {
			m[l] = append(m[l], e)
		}
	}
	return m
}
