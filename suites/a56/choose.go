package a56

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// Most A56 checks read what priority decides inside: its children's
// creation (their subchannels), its failover and deactivation timers and the
// picker it reports; those need the policy's events (spec.NeedsPolicy).
// The others read the channel's state, the capture and the RPCs.

// emptyPriorities: a config with no priorities; the channel fails RPCs.
func emptyPriorities() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionAlgorithm,
		Scenario: scenario.New("empty-priorities").
			Describe("priorities [] and no children; b1 resolved; r1 (no wait for ready) at 1 ms").
			Backend("b1", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("")).
			At(0, scenario.Resolve(at("b1/ipv4", "p0"))).
			At(time.Millisecond, scenario.RPC("r1")).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(2 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-CHOOSE-EMPTY-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// The channel's own CONNECTING (resolving) before the list
				// arrives is not priority's.
				up := spec.Of(tr, trace.KindResolverUpdate)
				g.Expect(up).NotTo(gomega.BeEmpty())
				states := spec.ChannelStates(tr)
				if !spec.HasPolicy(tr) {
					// From outside, the channel's own CONNECTING, leaving
					// IDLE to resolve, comes before priority's first
					// report, and may come after the list arrived (the
					// reference's own lab run shows it 3 µs after): what
					// priority reports starts at the first other state.
					states = trace.Select(states, func(e trace.Event) bool { return e.T >= up[0].T })
					for len(states) > 0 && states[0].State == "CONNECTING" {
						states = states[1:]
					}
				}
				g.Expect(states).NotTo(gomega.BeEmpty())
				for _, e := range states {
					g.Expect(e.State).To(gomega.Equal("TRANSIENT_FAILURE"), e.String())
				}
				r1 := spec.RPCResult(g, tr, "r1")
				g.Expect(r1.Code).To(gomega.Equal("UNAVAILABLE"))
				g.Expect(r1.Err).NotTo(gomega.BeEmpty(), "the status should say why")
				expectNone(g, spec.Of(tr, trace.KindSubchannelNew, trace.KindSYN), "no child, no subchannel, no connection")
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}

// tfFailoverAtOnce: p0 and p1 refuse, p2 serves: each failing child is
// passed over as soon as it reports TRANSIENT_FAILURE.
func tfFailoverAtOnce() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionAlgorithm,
		Scenario: scenario.New("tf-failover-at-once").
			Describe("p0 on b1 and p1 on b2 refuse, p2 on b3 serves; r1 (wait for ready) at 1 ms").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("", pickFirst("p0"), pickFirst("p1"), pickFirst("p2"))).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"), at("b3/ipv4", "p2"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(2 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-TF-FAILOVER-AT-ONCE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				f1, f2 := spec.ConnectionFailures(tr, spec.Addr(tr, "b1/ipv4")), spec.ConnectionFailures(tr, spec.Addr(tr, "b2/ipv4"))
				g.Expect(f1).NotTo(gomega.BeEmpty())
				g.Expect(f2).NotTo(gomega.BeEmpty())
				spec.RequireSteadyMachine(tr, min(firstSYN(g, tr, "b2/ipv4").T, f1[0]), max(firstSYN(g, tr, "b2/ipv4").T, f1[0]), "attempt to p1 once p0 failed")
				g.Expect(firstSYN(g, tr, "b2/ipv4").T).To(beAbout(f1[0], slack+2*time.Millisecond), "p1 is tried as soon as p0 fails")
				spec.RequireSteadyMachine(tr, min(firstSYN(g, tr, "b3/ipv4").T, f2[0]), max(firstSYN(g, tr, "b3/ipv4").T, f2[0]), "attempt to p2 once p1 failed")
				g.Expect(firstSYN(g, tr, "b3/ipv4").T).To(beAbout(f2[0], slack+2*time.Millisecond), "p2 is tried as soon as p1 fails")
				r1 := spec.RPCResult(g, tr, "r1")
				g.Expect(r1.Backend).To(gomega.Equal("b3"))
				g.Expect(r1.T).To(gomega.BeNumerically("<", time.Second), "no failover timer is waited out")
			}},
			{Requirement: "A56-FAILOVER-TIMER-CANCEL", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				f := timers(tr, timerFailover)
				starts, stops := ofTimer(f, trace.KindTimerStart), ofTimer(f, trace.KindTimerStop)
				g.Expect(starts).To(gomega.HaveLen(3), "three children created:%s", spec.Render(f))
				g.Expect(stops).To(gomega.HaveLen(3), "every failover timer cancelled:%s", spec.Render(f))
				expectNone(g, ofTimer(f, trace.KindTimerFire), "none expected")
				spec.RequireSteadyMachine(tr, min(stops[0].T, failures(tr, "b1/ipv4")[0].T), max(stops[0].T, failures(tr, "b1/ipv4")[0].T), "cancelling of p0's timer at its TRANSIENT_FAILURE")
				g.Expect(stops[0].T).To(beAbout(failures(tr, "b1/ipv4")[0].T, slack+2*time.Millisecond), "p0's TRANSIENT_FAILURE cancels its timer")
				spec.RequireSteadyMachine(tr, min(stops[1].T, failures(tr, "b2/ipv4")[0].T), max(stops[1].T, failures(tr, "b2/ipv4")[0].T), "cancelling of p1's timer at its TRANSIENT_FAILURE")
				g.Expect(stops[1].T).To(beAbout(failures(tr, "b2/ipv4")[0].T, slack+2*time.Millisecond), "p1's TRANSIENT_FAILURE cancels its timer")
				var ready time.Duration
				for _, e := range subchannelStates(tr, "b3/ipv4") {
					if e.State == "READY" {
						ready = e.T
						break
					}
				}
				spec.RequireSteadyMachine(tr, min(stops[2].T, ready), max(stops[2].T, ready), "cancelling of p2's timer at its READY")
				g.Expect(stops[2].T).To(beAbout(ready, slack+2*time.Millisecond), "p2's READY cancels its timer")
			}},
			{Requirement: "A56-CHOOSE-CREATES-REACTIVATES", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				var order []string
				for _, e := range spec.Of(tr, trace.KindSubchannelNew) {
					order = append(order, e.Addrs...)
				}
				g.Expect(order).To(gomega.HaveLen(3))
				g.Expect(order).To(gomega.Equal([]string{spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4"), spec.Addr(tr, "b3/ipv4")}),
					"the scan creates p0, p1 (passed over) and p2 in order")
			}},
			{Requirement: "A56-CHOOSE-REPORTS-CHILD", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				states := balancerStates(tr)
				g.Expect(states).NotTo(gomega.BeEmpty())
				for _, e := range states[:len(states)-1] {
					g.Expect(e.State).To(gomega.Equal("CONNECTING"), "each chosen child is CONNECTING until p2 is READY: %s", e.String())
				}
				g.Expect(states[len(states)-1].State).To(gomega.Equal("READY"), "p2's READY is reported as priority's own")
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}
