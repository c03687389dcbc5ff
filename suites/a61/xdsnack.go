package a61

import (
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// A61, Support Multiple Addresses Per Endpoint in xDS: an additional_addresses
// entry without an address rejects the EDS resource, and the address of one
// is validated exactly like Endpoint.address (whose rules are A27's,
// ClusterLoadAssignment Proto: a socket_address holding an IPv4 or IPv6
// address and a port_value, unique in the cluster). One spec per case,
// table-driven: a valid first version (round_robin over e1 = b1, e2 = b2)
// serves four RPCs; the second drops e2 and gives e1 the case's additional
// address. The EDS resource is NACKed, with an error detail in any wording
// (the documents prescribe none), and the first version keeps serving (had
// the second been taken, every RPC would go to b1). A61's guard is set true
// (see xds.go).

// addrNACKCase is one case of the rule.
type addrNACKCase struct {
	name, describe string
	// invalid is the form of e1's bad additional address (a
	// xds.InvalidAddr… constant); dup, when set instead, is a valid
	// additional address repeating one the resource already has.
	invalid string
	dup     scenario.Addr
	req     string // the requirement the case checks
}

// The requirements of the rule.
const (
	reqAddrUnset     = "A61-XDS-ADDITIONAL-ADDRESS-UNSET"
	reqAddrValidated = "A61-XDS-ADDITIONAL-ADDRESS-VALIDATED"
)

var addrNACKCases = []addrNACKCase{
	{name: "xds-additional-address-unset", describe: "an additional_addresses entry without an address",
		invalid: xds.InvalidAddrUnset, req: reqAddrUnset},
	{name: "xds-additional-address-pipe", describe: "an additional address that is a pipe, not a socket_address",
		invalid: xds.InvalidAddrNoSocket, req: reqAddrValidated},
	{name: "xds-additional-address-host-name", describe: "an additional address holding a host name, not an IP address",
		invalid: xds.InvalidAddrNotIP, req: reqAddrValidated},
	{name: "xds-additional-address-named-port", describe: "an additional address with a named_port, not a port_value",
		invalid: xds.InvalidAddrNoPortValue, req: reqAddrValidated},
	{name: "xds-additional-address-duplicate", describe: "an additional address repeating the endpoint's own (b1/ipv4)",
		dup: "b1/ipv4", req: reqAddrValidated},
}

// xdsAddrNACKSpecs are the specs of addrNACKCases.
func xdsAddrNACKSpecs() []spec.Spec {
	out := make([]spec.Spec, 0, len(addrNACKCases))
	for _, c := range addrNACKCases {
		out = append(out, xdsAddrNACK(c))
	}
	return out
}

// badEndpoint is e1 of the case's rejected version: b1/ipv4 with the
// case's additional address.
func (c addrNACKCase) badEndpoint() xds.Endpoint {
	e := xds.Endpoint{Addr: "b1/ipv4"}
	if c.dup != "" {
		e.AdditionalAddrs = []scenario.Addr{c.dup}
	} else {
		e.InvalidAdditionalAddrs = []string{c.invalid}
	}
	return e
}

// xdsAddrNACK: EDS version 1 (round_robin: e1 = b1, e2 = b2), four RPCs
// at 1 s; at 2 s version 2, e1 alone with the case's additional address;
// four RPCs at 3 s.
func xdsAddrNACK(c addrNACKCase) spec.Spec {
	first, second := spec.RPCIDs("r", 4), spec.RPCIDs("s", 4)
	cluster := xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin}
	b := scenario.New(c.name).
		Describe("eds1 (round_robin: b1, b2); four RPCs at 1 s; at 2 s eds1's endpoints become b1 alone with "+
			c.describe+"; four RPCs at 3 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.ServeXDS(xdsResources(cluster, oneLocality("eds1", xds.Endpoint{Addr: "b1/ipv4"}, xds.Endpoint{Addr: "b2/ipv4"}))))
	spec.SendRPCs(b, time.Second, first)
	b.At(2*time.Second, scenario.ServeXDS(xdsResources(cluster, oneLocality("eds1", c.badEndpoint()))))
	spec.SendRPCs(b, 3*time.Second, second)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A61, Section: sectionXDSAddrs,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Agreement: spec.XDSSpreadAgreement(s, labSlack),
		Checks: []spec.Check{
			{Requirement: c.req, Name: "NACKed", Assert: func(g gomega.Gomega, tr *trace.Trace) { expectEDSNACK(g, tr, c) }},
			{Requirement: c.req, Name: "first version kept", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				requireNACKed(tr, spec.TypeEDS)
				expectFirstVersionServes(g, tr, first, second)
			}},
			{Requirement: c.req, Assert: expectEndpointsKept, Needs: resolverOutput},
		},
	}
}

// expectEDSNACK checks that version 1 of the EDS resource was ACKed and
// version 2 NACKed, every NACK keeping version 1 (the client may NACK again,
// on a re-subscription) and carrying an error detail.
func expectEDSNACK(g gomega.Gomega, tr *trace.Trace, c addrNACKCase) {
	g.Expect(spec.ACKed(tr, spec.TypeEDS, "1")).To(gomega.BeTrue(), "the valid first EDS resource should be ACKed:%s", spec.Render(spec.Of(tr, trace.KindXDSRequest)))
	nacks := spec.XDSRequests(tr, spec.TypeEDS, trace.XDSNACK)
	if len(nacks) == 0 {
		verdict.NoSign("the EDS resource with %s was never NACKed:%s", c.describe, spec.Render(spec.Of(tr, trace.KindXDSRequest)))
	}
	for _, n := range nacks {
		g.Expect(n.Version).To(gomega.Equal("1"), "every NACK should carry the last version accepted:%s", spec.Render(nacks))
		g.Expect(n.Err).NotTo(gomega.BeEmpty(), "every NACK should carry an error detail (got %q):%s", n.Err, spec.Render(nacks))
	}
	g.Expect(spec.ACKed(tr, spec.TypeEDS, "2")).To(gomega.BeFalse(), "the second EDS resource should not be ACKed")
}

// expectFirstVersionServes checks that the RPCs before and after the NACK
// were both spread over b1 and b2 by the first version's round_robin.
func expectFirstVersionServes(g gomega.Gomega, tr *trace.Trace, first, second []string) {
	spec.RequireConnectedBefore(tr, spec.RPCResult(g, tr, first[0]).T, "b1", "b2")
	for _, ids := range [][]string{first, second} {
		g.Expect(spec.ServedByEach(g, tr, ids...)).To(gomega.ConsistOf("b1", "b2", "b1", "b2"),
			"the first version's round_robin over b1 and b2 should serve %v (the rejected version has b1 alone)", ids)
	}
}

// expectEndpointsKept checks, from the resolver's own output (the
// reference's), that no resolver update after the NACK changed the
// channel's endpoints.
func expectEndpointsKept(g gomega.Gomega, tr *trace.Trace) {
	nacks := spec.XDSRequests(tr, spec.TypeEDS, trace.XDSNACK)
	g.Expect(nacks).NotTo(gomega.BeEmpty())
	v1 := [][]string{addrs(tr, "b1/ipv4"), addrs(tr, "b2/ipv4")}
	later := trace.Select(updates(tr), func(e trace.Event) bool {
		return e.T >= nacks[0].T && !slices.EqualFunc(e.Endpoints, v1, slices.Equal)
	})
	g.Expect(later).To(gomega.BeEmpty(), "a NACKed EDS resource should not change the channel's endpoints:%s", spec.Render(later))
}

// oneLocality is cluster's load assignment: one priority, one locality
// "z1" holding eps.
func oneLocality(cluster string, eps ...xds.Endpoint) xds.LoadAssignment {
	return localityNamed(cluster, "z1", eps...)
}

// localityNamed is cluster's load assignment: one priority, one locality
// of sub_zone zone (weight 1) holding eps.
func localityNamed(cluster, zone string, eps ...xds.Endpoint) xds.LoadAssignment {
	return xds.LoadAssignment{Cluster: cluster, Priorities: []xds.Priority{{Localities: []xds.Locality{
		{Name: zone, Weight: 1, Endpoints: eps},
	}}}}
}

// requireNACKed states the precondition of a check of what the client
// serves after rejecting version 2 of a resource: it did reject it. A
// client that accepted it fails the NACK check; what it served after is
// that one behaviour's consequence, not a second fail.
func requireNACKed(tr *trace.Trace, typeURL string) {
	verdict.Require(len(spec.XDSRequests(tr, typeURL, trace.XDSNACK)) > 0,
		"version 2 was not NACKed: what the client served after it follows from that, which the NACK check judges")
}
