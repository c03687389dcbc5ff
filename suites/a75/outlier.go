package a75

import (
	"fmt"
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

// The outlier_detection of odAcrossPriorities: a sweep every odInterval
// from the config; failure percentage ejection over odVolume requests.
const (
	odInterval = 2 * time.Second
	odVolume   = 4
)

// odAcrossPriorities is A75, Aggregate Cluster Changes: outlier_detection
// moves above the priority policy that chooses a cluster's priority, so it
// counts and ejects over all the cluster's priorities together.
//
// eds1 (round_robin) has b1 in priority 0 and b2 in priority 1, and
// outlier_detection with failure percentage ejection: threshold 50 %,
// enforcement 100, minimum_hosts 2, request_volume 4 (interval 2 s, base
// ejection time 30 s). w1 at 0 reaches b1 (priority 0 is chosen). The
// other steps are timed from the client's first EDS ACK (spec.ODCounting),
// as the checks place the sweeps, and so are the times below. b1 fails
// every RPC from 0.2 s (fail_rpcs): four RPCs at 0.3 s fail on b1. b1 goes
// down at 0.4 s: priority 0 fails and priority 1 takes over, so four RPCs
// at 0.5 s reach b2. b1 is up, answering again, from 0.6 s; its pick_first
// reconnects after its backoff (about 1 s) and priority 0, READY again,
// takes the RPCs back. At the first sweep two endpoints have the request
// volume only when both priorities are counted together: b1 failed 80 %
// and is ejected, which leaves priority 0 without an endpoint, so RPCs at
// 2.4 s go to priority 1, b2. Counted per priority (one endpoint each,
// below minimum_hosts) nothing would be ejected and they would reach b1.
func odAcrossPriorities() spec.Spec {
	return odPriorities("od-across-priorities", "eds1")
}

// odAcrossPrioritiesAggregate is odAcrossPriorities with eds1 behind an
// aggregate cluster agg, the case A75 was written for: under the aggregate
// each underlying cluster is a child of agg's priority policy with its own
// outlier_detection above its own priorities, so eds1's two priorities are
// still counted together (before A75 the aggregate's and eds1's priorities
// were flattened into one list, one outlier_detection per priority).
func odAcrossPrioritiesAggregate() spec.Spec {
	return odPriorities("od-across-priorities-aggregate", "agg")
}

// odPriorities is the scenario and checks of odAcrossPriorities, the
// client routed to cluster root: eds1 itself, or an aggregate over it.
func odPriorities(name, root string) spec.Spec {
	cluster := eds("eds1", xds.RoundRobin)
	cluster.OutlierDetection = &xds.OutlierDetection{
		Interval: odInterval, BaseEjectionTime: 30 * time.Second, MaxEjectionPercent: 50,
		FailurePercentage: &xds.FailurePercentage{Threshold: 50, Enforcement: 100, MinimumHosts: 2, RequestVolume: odVolume},
	}
	clusters, via := []xds.Cluster{cluster}, ""
	if root != cluster.Name {
		clusters, via = append(clusters, aggregate(root, "", cluster.Name)), fmt.Sprintf(" behind aggregate %s", root)
	}
	failing, failover, after := spec.RPCIDs("a", 4), spec.RPCIDs("s", 4), spec.RPCIDs("n", 4)
	b := scenario.New(name).
		Describe("eds1 (round_robin; outlier_detection failure_percentage 50 %, minimum_hosts 2, request_volume 4, interval 2 s)"+via+": "+
			"p0 = [b1], p1 = [b2]; w1 at 0; times from the first EDS ACK: b1 fails RPCs from 0.2 s; four RPCs at 0.3 s; b1 down at 0.4 s (failover to p1); "+
			"four RPCs at 0.5 s; b1 up and answering at 0.6 s; four RPCs at 2.4 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(spec.XDSResources(root, clusters, assignment("eds1", addrs("b1/ipv4"), addrs("b2/ipv4")))))
	spec.SendRPCs(b, 0, []string{"w1"})
	b.AfterDelay(spec.ODCounting, 200*time.Millisecond, scenario.Fault("b1/ipv4", scenario.FailRPCs))
	spec.SendRPCsAfter(b, spec.ODCounting, 300*time.Millisecond, failing)
	b.AfterDelay(spec.ODCounting, 400*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Down))
	spec.SendRPCsAfter(b, spec.ODCounting, 500*time.Millisecond, failover)
	b.AfterDelay(spec.ODCounting, 600*time.Millisecond, scenario.Clear("b1/ipv4"))
	spec.SendRPCsAfter(b, spec.ODCounting, 2400*time.Millisecond, after)
	s := b.FinishAfterEveryRPC().
		End(6 * time.Second).
		MustBuild()
	counted := slices.Concat([]string{"w1"}, failing, failover)
	return spec.Spec{
		Doc: requirement.A75, Section: sectionAggregate,
		Scenario:  s,
		Agreement: spec.ODAgreement(s, slices.Concat(counted, after)...),
		Checks: []spec.Check{
			{Requirement: "A75-AGG-OD-ACROSS-PRIORITIES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				requireCountedAcrossPriorities(tr, counted, after)
				spec.RequireInODInterval(tr, odInterval, 1, after...)
				g.Expect(spec.ServedByEach(g, tr, after...)).To(gomega.HaveEach("b2"),
					"b1, counted together with b2 of the other priority, should be ejected at the first sweep, leaving priority 0 "+
						"without an endpoint (counted per priority it would stay, and serve these RPCs):%s", spec.RenderAnswers(spec.Answers(tr, after...)))
			}},
			{Requirement: "A75-AGG-OD-ACROSS-PRIORITIES", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				for _, id := range failing {
					p := spec.PicksOf(tr, id)
					g.Expect(p).To(gomega.HaveLen(1), "%s should be picked once (outlier detection counts it):%s", id, spec.Render(p))
					g.Expect(p[0].Addr).To(gomega.Equal(b1), "%s should be picked on b1, in priority 0", id)
				}
				root := lastTree(g, tr)
				ods := root.find(func(n node) bool { return n.is("outlier_detection") })
				g.Expect(ods).To(gomega.HaveLen(1), "one outlier_detection for the cluster: %s", root)
				prios := ods[0].find(func(n node) bool { return n.is("priority") })
				g.Expect(prios).To(gomega.HaveLen(1), "the priority policy should be below outlier_detection: %s", root)
				g.Expect(prios[0].priorities()).To(gomega.Equal([]string{"eds1/p0", "eds1/p1"}),
					"one outlier_detection above both of eds1's priorities: %s", root)
			}},
		},
	}
}

// requireCountedAcrossPriorities states the preconditions of
// odAcrossPriorities's black-box check: the RPCs counted were all answered
// before the first sweep, b1 (priority 0) answered at least request_volume
// of them, more than half failed, and b2 (priority 1) at least
// request_volume, none failed; and b1 was connected again, after its fault
// was cleared, before the RPCs after (else they could not reach it however
// it was counted).
func requireCountedAcrossPriorities(tr *trace.Trace, counted, after []string) {
	a1, a2 := spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4")
	spec.RequireInODInterval(tr, odInterval, 0, counted...)
	as := spec.Answers(tr, counted...)
	t := spec.TallyAnswers(as)
	verdict.Require(t[a1].Total >= odVolume && 2*t[a1].Failed > t[a1].Total,
		"before the first sweep b1 should have at least %d requests, more than half failed:%s", odVolume, spec.RenderAnswers(as))
	verdict.Require(t[a2].Total >= odVolume && t[a2].Failed == 0,
		"before the first sweep b2 (priority 1, after the failover) should have at least %d requests, none failed:%s", odVolume, spec.RenderAnswers(as))
	clear := trace.Select(spec.Of(tr, trace.KindFaultClear), func(e trace.Event) bool { return e.Addr == a1 })
	verdict.Require(len(clear) > 0, "b1's fault was never cleared")
	n1, _, _ := spec.RPCSpan(tr, after[0])
	back := trace.Select(spec.Of(tr, trace.KindSYNACK), func(e trace.Event) bool { return e.Addr == a1 && e.T > clear[0].T && e.T < n1 })
	verdict.Require(len(back) > 0, "b1 should be connected again (its pick_first's backoff over) before the RPCs after the sweep, "+
		"so that only its ejection keeps them from priority 0")
}
