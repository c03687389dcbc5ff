package spec

import (
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// xDS: the state of the world the suites' scenarios serve, and what the
// client answered (its xds-request events: subscriptions, ACKs and NACKs).

// The names of the xDS resources every xDS scenario's client starts from:
// the client's target is "xds:///" + XDSListener, whose listener routes
// every RPC, through route configuration XDSRouteConfig, to one cluster.
const (
	XDSListener    = "svc.conform"
	XDSRouteConfig = "rc"
)

// XDSResources is a state of the world whose listener (XDSListener) routes
// every RPC to cluster root, with clusters and their load assignments.
func XDSResources(root string, clusters []xds.Cluster, las ...xds.LoadAssignment) xds.Resources {
	return xds.Resources{
		Listeners:    []xds.Listener{{Name: XDSListener, RouteConfig: XDSRouteConfig}},
		RouteConfigs: []xds.RouteConfig{{Name: XDSRouteConfig, Cluster: root}},
		Clusters:     clusters,
		Endpoints:    las,
	}
}

// The type URLs of the resources the checks read (A27: a Cluster is a CDS
// resource, a ClusterLoadAssignment an EDS one), as xds-request events
// name them.
const (
	TypeCDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	TypeEDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// XDSRequests are tr's xds-request events for typeURL of kind xds
// (trace.XDSACK, trace.XDSNACK, trace.XDSSubscribe), in time order.
func XDSRequests(tr *trace.Trace, typeURL, xds string) []trace.Event {
	return trace.Select(tr.Events, trace.OfKind(trace.KindXDSRequest), func(e trace.Event) bool {
		return e.TypeURL == typeURL && e.XDS == xds
	})
}

// ACKed reports whether the client ACKed version v of typeURL.
func ACKed(tr *trace.Trace, typeURL, v string) bool {
	return slices.ContainsFunc(XDSRequests(tr, typeURL, trace.XDSACK), func(e trace.Event) bool { return e.Version == v })
}

// XDSServedAt is when the management server started serving version v: the
// lab's note of the xds step, or, in the simulator (which serves a step and
// has the client answer it at one virtual instant), the first ACK or NACK
// of v. A client may act on a resource before it answers it, so a check
// that times a reaction counts from here, not from the ACK. ok is false
// when v was never served.
func XDSServedAt(tr *trace.Trace, v string) (at time.Duration, ok bool) {
	prefix := "xds step: version " + v + ":"
	for _, e := range tr.Events {
		if e.Kind == trace.KindNote && e.Source == trace.SourceHarness && strings.HasPrefix(e.Detail, prefix) {
			return e.T, true
		}
	}
	for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindXDSRequest)) {
		if e.Version == v && (e.XDS == trace.XDSACK || e.XDS == trace.XDSNACK) {
			return e.T, true
		}
	}
	return 0, false
}

// RequireXDSPickFirst states the precondition of a check that tells a
// cluster's policy by pick_first's behaviour: the client reads pick_first
// through xDS (A62, "pick_first via xDS"). A driver that does not declare
// it (harness/driver's "xds_pick_first") runs such a cluster by its
// lb_policy enum, ROUND_ROBIN, without a word, which the check cannot tell
// from the rule's violation. The reference and linked clients read it.
func RequireXDSPickFirst(tr *trace.Trace) {
	can, ok := tr.Header.Env[trace.EnvDriverCan]
	if !ok {
		return
	}
	verdict.Require(slices.Contains(strings.Split(can, ","), "xds_pick_first"),
		"the client does not read pick_first through xDS (its driver does not declare xds_pick_first): it runs a PickFirst cluster as round_robin, which this check cannot tell from the rule's violation")
}
