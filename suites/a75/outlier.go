package a75

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/session"
	"github.com/conformlab/conform/suites/spec"
)

// odInterval is the outlier detection interval of odAcrossPriorities: its
// first sweep is at about 2 s.
const odInterval = 2 * time.Second

// The timers odAcrossPriorities reads, by purpose: outlier detection's
// sweep (A50) and a priority child's failover timer (A56).
const (
	timerODInterval = "outlier detection interval"
	timerFailover   = "failover"
)

// odAcrossPriorities is A75, Aggregate Cluster Changes: outlier_detection
// moves above the priority policy that chooses a cluster's priority, so it
// counts and ejects over all the cluster's priorities together.
//
// eds1 (round_robin) has b1 in priority 0 and b2 in priority 1, and
// outlier_detection with failure percentage ejection: threshold 50 %,
// enforcement 100, minimum_hosts 2, request_volume 4 (interval 2 s, base
// ejection time 30 s). w1 at 1 s reaches b1 (priority 0 is chosen). Four
// RPCs at 1.1 s go to b1 and fail (their deadline, 0.5 ms, is shorter than
// the simulated round trip: they fail after the pick, which outlier
// detection counts); four RPCs at 1.2 s carry a session cookie naming b2
// (conform's stand-in for the stateful-session filter; xds_override_host,
// below outlier_detection, reaches priority 1) and succeed. At the 2 s
// sweep two endpoints have the request volume only when both priorities
// are counted together: b1 fails 80 % and is ejected. Priority 0 is then
// left with no endpoint, so RPCs without a session at 2.5 s go to
// priority 1, b2. Counted per priority (one endpoint each, below
// minimum_hosts) nothing would be ejected and they would reach b1.
//
// Simulation only: the lab's backends always answer OK, and a
// sub-millisecond deadline does not fail its RPCs after the pick
// deterministically there.
func odAcrossPriorities() spec.Spec {
	b2 := concrete("b2", 1, scenario.IPv4)
	cluster := eds("eds1", xds.RoundRobin)
	cluster.OutlierDetection = &xds.OutlierDetection{
		Interval: odInterval, BaseEjectionTime: 30 * time.Second, MaxEjectionPercent: 50,
		FailurePercentage: &xds.FailurePercentage{Threshold: 50, Enforcement: 100, MinimumHosts: 2, RequestVolume: 4},
	}
	failing, sessions, after := spec.RPCIDs("a", 4), spec.RPCIDs("s", 4), spec.RPCIDs("n", 4)
	b := scenario.New("od-across-priorities").
		Describe("eds1 (round_robin; outlier_detection failure_percentage 50 %, minimum_hosts 2, request_volume 4, interval 2 s): "+
			"p0 = [b1], p1 = [b2]; w1 at 1 s; four RPCs failing on b1 at 1.1 s; four session RPCs on b2 at 1.2 s; four RPCs at 2.5 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(spec.XDSResources("eds1", []xds.Cluster{cluster}, assignment("eds1", addrs("b1/ipv4"), addrs("b2/ipv4")))))
	spec.SendRPCs(b, time.Second, []string{"w1"})
	for i, id := range failing {
		b.At(1100*time.Millisecond+time.Duration(i)*10*time.Millisecond, scenario.RPC(id, scenario.Deadline(500*time.Microsecond)))
	}
	spec.SendRPCs(b, 1200*time.Millisecond, sessions, session.Cookie(b2))
	spec.SendRPCs(b, 2500*time.Millisecond, after)
	s := b.After(scenario.On("rpc-result").WithRPC(after[len(after)-1]), scenario.Finish()).
		End(4 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A75, Section: sectionAggregate,
		Scenario: s,
		Modes:    []trace.Mode{spec.Sim},
		Checks: []spec.Check{
			{Requirement: "A75-AGG-OD-ACROSS-PRIORITIES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "w1")).To(gomega.Equal("b1"), "priority 0 (b1) is chosen at first")
				for _, id := range failing {
					spec.ExpectFailed(g, tr, id)
				}
				g.Expect(spec.ServedByEach(g, tr, sessions...)).To(gomega.HaveEach("b2"), "the session's cookie reaches b2, in priority 1")
				g.Expect(spec.ServedByEach(g, tr, after...)).To(gomega.HaveEach("b2"),
					"b1, counted together with b2 of the other priority, should be ejected at the sweep, leaving priority 0 "+
						"without an endpoint (counted per priority it would stay, and serve these RPCs)")
			}},
			{Requirement: "A75-AGG-OD-ACROSS-PRIORITIES", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				for _, id := range failing {
					p := spec.PicksOf(tr, id)
					g.Expect(p).To(gomega.HaveLen(1), "%s should be picked once (outlier detection counts it):%s", id, spec.Render(p))
					g.Expect(p[0].Addr).To(gomega.Equal(b1), "%s should be picked on b1, in priority 0", id)
				}
				// Priority 1 is started when the sweep ejects b1, and only
				// then: the ejection empties priority 0.
				var sweeps []time.Duration
				for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindTimerFire)) {
					if e.Timer == timerODInterval {
						sweeps = append(sweeps, e.T)
					}
				}
				failovers := trace.Select(tr.Events, trace.OfKind(trace.KindTimerStart), func(e trace.Event) bool {
					return e.Timer == timerFailover && e.T > spec.RPCStart(g, tr, "w1")
				})
				g.Expect(failovers).To(gomega.HaveLen(1), "priority 1 should be started once, after w1:%s", spec.Render(failovers))
				g.Expect(sweeps).To(gomega.ContainElement(failovers[0].T), "priority 1 should be started by an outlier detection sweep (b1 ejected)")
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
