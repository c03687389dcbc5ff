package a62

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// The RPCs of xdsAggregateUnreachableDNSFirst: one a second from 1 s,
// without wait_for_ready, each with a short deadline: an RPC that meets a
// CONNECTING or IDLE dns1 waits, and fails when its deadline passes.
var unreachableDNSRPCs = spec.RPCIDs("r", 6)

// unreachableDNSDeadline is each of those RPCs' deadline.
const unreachableDNSDeadline = 500 * time.Millisecond

// xdsAggregateUnreachableDNSFirst is A62's motivating case (Background,
// Sticky Transient Failure): an aggregate cluster whose first cluster is
// LOGICAL_DNS and unreachable, and whose second is EDS. The LOGICAL_DNS
// cluster's name resolves to b1, which refuses every connection; eds1
// holds b2. Each cluster is a child of priority, and the LOGICAL_DNS one
// runs pick_first: with sticky TRANSIENT_FAILURE it stays in
// TRANSIENT_FAILURE while it reconnects, so priority keeps the picks on
// eds1; without it, pick_first would leave TRANSIENT_FAILURE when its
// backoff ends and priority would send the picks back to the unreachable
// cluster. RPCs over six seconds (several of pick_first's backoffs) must
// all reach b2.
func xdsAggregateUnreachableDNSFirst() spec.Spec {
	b := scenario.New("xds-aggregate-unreachable-dns-first").
		Describe("aggregate over dns1 (LOGICAL_DNS: b1, refusing) then eds1 (b2); an RPC (no wait for ready, 500 ms deadline) every second from 1 s to 6 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(0, scenario.ServeXDS(spec.XDSResources("agg", []xds.Cluster{
			{Name: "agg", Type: xds.ClusterAggregate, Clusters: []string{"dns1", "eds1"}},
			{Name: "dns1", Type: xds.ClusterLogicalDNS, DNSHost: "dns1.conform"},
			{Name: "eds1", Type: xds.ClusterEDS},
		}, xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{
			{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{{Addr: "b2/ipv4"}}},
		}}}})))
	for i, id := range unreachableDNSRPCs {
		b.At(time.Duration(i+1)*time.Second, scenario.RPC(id, scenario.Deadline(unreachableDNSDeadline)))
	}
	last := unreachableDNSRPCs[len(unreachableDNSRPCs)-1]
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyTF,
		Labels:   []string{spec.LabelXDS},
		Scenario: s,
		Checks: []spec.Check{
			{Requirement: "A62-STICKY-TF-PRIORITY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// The precondition: dns1's pick_first went through its
				// backoff at least twice during the RPCs (a third attempt
				// to b1 before the last one), so a pick_first that left
				// TRANSIENT_FAILURE after a backoff had the chance to.
				b1 := spec.Addr(tr, "b1/ipv4")
				lastSent := spec.RPCStart(g, tr, last)
				tries := len(spec.AttemptsTo(trace.Window(tr.Events, 0, lastSent), b1))
				verdict.Require(tries >= 3, "dns1's pick_first tried b1 %d times before the last RPC: its backoff never ran out twice, so nothing was shown", tries)
				for _, id := range unreachableDNSRPCs {
					r := spec.RPCResult(g, tr, id)
					g.Expect(r.Code).To(gomega.Equal("OK"), "%s should go to eds1 while dns1 is unreachable: %s", id, r.Err)
					g.Expect(r.Backend).To(gomega.Equal("b2"), "%s should go to eds1 (b2), not the unreachable dns1", id)
				}
			}},
			{Requirement: "A62-STICKY-TF-PRIORITY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// An RPC that priority sent to a dns1 gone IDLE would still
				// reach b2 once b1 refused it (at once, in the lab); what
				// shows the detour is the channel: priority reports the
				// child it chose, so the channel would leave READY.
				spec.ExpectStateSequence(g, tr, []string{connecting, ready},
					"dns1 reconnecting in TRANSIENT_FAILURE should not take the picks from eds1: the channel stays READY")
			}},
		},
		// dns1's reconnections follow each mode's own jittered backoff,
		// and an RPC beside one can take tens of milliseconds in the lab.
		Agreement: spec.XDSConnectionAgreement(s, labSlack),
	}
}
