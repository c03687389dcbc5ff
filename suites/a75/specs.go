// Package a75 is the suite for gRFC A75 (xDS aggregate cluster behavior
// fixes), as specs the Ginkgo suite and `conform run` both execute. Every
// scenario is an xDS one: the client resolves "xds:///" + spec.XDSListener
// through the management server, whose resources follow the scenario's xds
// steps.
//
// Files by section: aggregate.go (Aggregate Cluster Changes; Rationale:
// nested aggregates), backcompat.go (Aggregate Cluster Changes: the
// GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT switch), outlier.go
// (Aggregate Cluster Changes: outlier detection across priorities),
// idletimeout.go (Reading the idle_timeout field in CDS), session.go
// (Stateful Session Affinity Changes; Changes in xds_override_host LB
// Policy).
package a75

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// The document's section headings, as the catalogue spells them.
const (
	sectionAggregate   = "Aggregate Cluster Changes"
	sectionRationale   = "Rationale"
	sectionIdleTimeout = "Reading the idle_timeout field in CDS"
	sectionSSA         = "Stateful Session Affinity Changes"
	sectionOverride    = "Changes in xds_override_host LB Policy"
)

// labSlack is how far a lab timing may stray from the simulated one: wall
// time, a real kernel, a real channel and a real management server.
const labSlack = 50 * time.Millisecond

// agreement is spec.XDSAgreement within labSlack.
func agreement(s *scenario.Scenario) *compare.Options {
	return spec.XDSAgreement(s, labSlack)
}

// spreadAgreement is spec.XDSSpreadAgreement within labSlack (seen:
// aggregate-eds-then-dns's r1 on b2 in the lab, b1 in the simulator).
func spreadAgreement(s *scenario.Scenario) *compare.Options {
	return spec.XDSSpreadAgreement(s, labSlack)
}

// policyEvents is the Needs of a check that reads the policy's own events
// (subchannels, timers): only the reference records them.
var policyEvents = []trace.Source{trace.SourcePolicy}

// Specs are the A75 specs, in document order.
func Specs() []spec.Spec {
	specs := []spec.Spec{
		aggregateEDSThenDNS(),
		aggregateLBPolicyIgnored(),
		aggregateUnderlyingPickFirst(),
		aggregateNestedFlattened(),
		aggregateBackwardCompat(),
		odAcrossPriorities(), odAcrossPrioritiesAggregate(),
		sessionFollowsEndpointAcrossPriorities(),
		sessionPickerBranches(),
		overrideLastUsedTime(),
	}
	return append(specs, idleTimeoutSpecs()...)
}

// eds is an EDS cluster with the given LB policy ("" is round_robin).
func eds(name, lb string) xds.Cluster {
	return xds.Cluster{Name: name, Type: xds.ClusterEDS, LBPolicy: lb}
}

// aggregate is an AGGREGATE cluster over clusters, naming lb (which A75
// says is ignored).
func aggregate(name, lb string, clusters ...string) xds.Cluster {
	return xds.Cluster{Name: name, Type: xds.ClusterAggregate, LBPolicy: lb, Clusters: clusters}
}

// assignment is cluster's load assignment: one locality "z1" per priority,
// priority i holding the endpoints of prios[i] (one address each).
func assignment(cluster string, prios ...[]scenario.Addr) xds.LoadAssignment {
	la := xds.LoadAssignment{Cluster: cluster}
	for _, p := range prios {
		loc := xds.Locality{Name: "z1", Weight: 1}
		for _, a := range p {
			loc.Endpoints = append(loc.Endpoints, xds.Endpoint{Addr: a})
		}
		la.Priorities = append(la.Priorities, xds.Priority{Localities: []xds.Locality{loc}})
	}
	return la
}

// addrs is a list of symbolic addresses, for assignment.
func addrs(as ...scenario.Addr) []scenario.Addr { return as }

// concrete is the address every runner gives backend number index (0-based
// in declaration order) in family fam: for building cookies into a
// scenario before there is a trace to read it from.
func concrete(name string, index int, fam scenario.Family) string {
	return runner.AddrOf(name, index, fam)
}

// expectACK checks that version v of typeURL was ACKed and never NACKed.
func expectACK(g gomega.Gomega, tr *trace.Trace, typeURL, v string) {
	g.Expect(spec.ACKed(tr, typeURL, v)).To(gomega.BeTrue(), "version %s of %s should be ACKed; requests:%s", v, typeURL, spec.Render(spec.Of(tr, trace.KindXDSRequest)))
	g.Expect(spec.XDSRequests(tr, typeURL, trace.XDSNACK)).To(gomega.BeEmpty(), "nothing of %s should be NACKed", typeURL)
}

// configs are tr's config-update events: the LB policy tree the resolver
// gave the channel, each time it changed (Detail: the JSON).
func configs(tr *trace.Trace) []trace.Event {
	return trace.Select(tr.Events, trace.OfKind(trace.KindConfigUpdate))
}
