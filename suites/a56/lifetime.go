package a56

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// backoffSlack is how far apart the simulator and the lab may be once a
// subchannel has waited out a backoff: the first backoff is 1 s ± 20 %
// (connection-backoff.md), drawn by the simulator's seeded source and by
// grpc-go's own in the lab, so the two can be up to 400 ms apart.
const backoffSlack = 450 * time.Millisecond

// primaryBack is the start both lifetime specs share: p0 (b1) refuses, so p1
// (b2) serves r1; b1 is cleared at 300 ms and p0's pick_first reconnects
// after its backoff; 10 ms after p1 is deactivated, r2 goes to p0.
func primaryBack(name, desc string) *scenario.Builder {
	return scenario.New(name).Describe(desc).
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("priority_experimental", priorityConfig("", pickFirst("p0"), pickFirst("p1"))).
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
		At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		At(300*time.Millisecond, scenario.Clear("b1/ipv4")).
		AfterDelay(scenario.On("timer-start").WithTimer(timerDeactivation), 10*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady()))
}

// readyAgain is when p0's subchannel (b1) became READY after the clear.
func readyAgain(g gomega.Gomega, tr *trace.Trace) time.Duration {
	for _, e := range subchannelStates(tr, "b1/ipv4") {
		if e.State == "READY" {
			return e.T
		}
	}
	g.Expect(false).To(gomega.BeTrue(), "p0's subchannel never became READY after b1 was cleared")
	return 0
}

// subchannelStates are the state reports and shutdowns of the subchannels
// for a.
func subchannelStates(tr *trace.Trace, a scenario.Addr) []trace.Event {
	return spec.SubchannelEvents(tr, spec.Addr(tr, a), trace.KindSubchannelState, trace.KindSubchannelShutdown)
}

// returnToHigherThenReactivate: the primary comes back, so priority returns
// to it and deactivates the secondary; the primary's backend then goes down,
// and the secondary, still deactivated, is reactivated and serves at once.
func returnToHigherThenReactivate() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionLifetime,
		Scenario: primaryBack("return-to-higher-then-reactivate",
			"p0 on b1 refuses, p1 on b2 serves r1; b1 cleared at 300 ms, p0 back, r2 to p0; then b1 down and r3 back to p1").
			AfterDelay(scenario.On("rpc-result").WithRPC("r2"), 100*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Down)).
			AfterDelay(scenario.On("rpc-result").WithRPC("r2"), 300*time.Millisecond, scenario.RPC("r3", scenario.WaitForReady())).
			FinishAfterEveryRPC().
			End(10 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-CHOOSE-FIRST-READY-IDLE", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.RPCResult(g, tr, "r1").Backend).To(gomega.Equal("b2"))
				back := readyAgain(g, tr)
				g.Expect(stateAt(tr, back+spec.Within(tr, labSlack))).To(gomega.Equal("READY"))
				g.Expect(spec.RPCResult(g, tr, "r2").Backend).To(gomega.Equal("b1"), "p0, READY again, is the first READY priority")
			}},
			{Requirement: "A56-DEACTIVATE-ON-HIGHER", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				back := readyAgain(g, tr)
				starts := ofTimer(timers(tr, timerDeactivation), trace.KindTimerStart)
				g.Expect(starts).To(gomega.HaveLen(1), "p1 deactivated once")
				g.Expect(starts[0].Duration).To(gomega.Equal(deactivationTimeout))
				spec.RequireSteadyMachine(tr, min(starts[0].T, back), max(starts[0].T, back), "deactivation of p1 when p0 is chosen again")
				g.Expect(starts[0].T).To(beAbout(back, spec.Within(tr, labSlack)), "p1 is deactivated when p0 is chosen again")
				end := spec.RPCResult(g, tr, "r3").T
				for _, e := range between(subchannelStates(tr, "b2/ipv4"), 0, end) {
					g.Expect(e.Kind).NotTo(gomega.Equal(trace.KindSubchannelShutdown), "deactivated, not destroyed: %s", e.String())
				}
			}},
			{Requirement: "A56-REACTIVATE", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				d := timers(tr, timerDeactivation)
				expectNone(g, ofTimer(d, trace.KindTimerFire), "none expected")
				stops := ofTimer(d, trace.KindTimerStop)
				g.Expect(stops).NotTo(gomega.BeEmpty(), "reactivating p1 cancels its deactivation timer:%s", spec.Render(d))
				g.Expect(stops[0].T).To(gomega.BeNumerically(">", spec.RPCResult(g, tr, "r2").T), "p1 is reactivated when p0 fails")
				g.Expect(stops[0].T).To(gomega.BeNumerically("<=", spec.RPCResult(g, tr, "r3").T))
				g.Expect(spec.RPCResult(g, tr, "r3").Backend).To(gomega.Equal("b2"), "p0 failed: p1 serves again")
				g.Expect(subchannelsFor(tr, "b2/ipv4")).To(gomega.HaveLen(1), "the same child, with the same subchannel")
			}},
			// r2, and so r3, are sent on priority's deactivation timer-start: the
			// scenario runs as designed only where the policy's events are.
			{Requirement: "A56-CHILD-STATE-KEPT", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				syns := freshSYNs(tr, "b2/ipv4")
				g.Expect(syns).To(gomega.HaveLen(1), "p1's saved READY picker is used as it is: no new connection:%s", spec.Render(syns))
				r3 := spec.RPCResult(g, tr, "r3")
				spec.RequireSteadyMachine(tr, spec.RPCStart(g, tr, "r3"), r3.T, "service of r3 at once by p1's saved picker")
				g.Expect(r3.T-spec.RPCStart(g, tr, "r3")).To(gomega.BeNumerically("<", 100*time.Millisecond),
					"r3 is served as soon as p0 fails, by p1's saved picker")
			}},
			{Requirement: "A56-CHOOSE-WHEN", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// A state update of p0 (READY after the clear, TRANSIENT_FAILURE
				// after b1 went down) is followed by a choice, reported at once.
				back := readyAgain(g, tr)
				g.Expect(between(balancerStates(tr), back, back+spec.Within(tr, labSlack)+1)).NotTo(gomega.BeEmpty(),
					"choosing on p0's READY should report p0's picker")
				var tf time.Duration
				for _, e := range subchannelStates(tr, "b1/ipv4") {
					if e.State == "TRANSIENT_FAILURE" && e.T > back {
						tf = e.T
						break
					}
				}
				g.Expect(tf).NotTo(gomega.BeZero(), "p0 never failed after b1 went down")
				g.Expect(between(balancerStates(tr), tf, tf+spec.Within(tr, labSlack)+1)).NotTo(gomega.BeEmpty(),
					"choosing on p0's TRANSIENT_FAILURE should report p1's picker")
			}},
		},
		Agreement: agreement(0, backoffSlack, lbKinds...),
	}
}

// deactivatedDestroyedAfter15Min: as above, but nothing fails again; the
// deactivated p1 is destroyed 15 minutes after its deactivation.
//
// Simulator only: 15 minutes of wall time is too long for a lab run.
func deactivatedDestroyedAfter15Min() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionLifetime,
		Scenario: primaryBack("deactivated-child-destroyed-15min",
			"p0 on b1 refuses, p1 on b2 serves; b1 cleared at 300 ms, p0 back and p1 deactivated; p1 destroyed 15 min later").
			At(16*time.Minute, scenario.RPC("r3", scenario.WaitForReady())).
			FinishAfterEveryRPC().
			End(17 * time.Minute).
			MustBuild(),
		Modes: []trace.Mode{spec.Sim},
		Checks: []spec.Check{
			{Requirement: "A56-DEACTIVATION-15MIN", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				d := timers(tr, timerDeactivation)
				starts, fires := ofTimer(d, trace.KindTimerStart), ofTimer(d, trace.KindTimerFire)
				g.Expect(starts).To(gomega.HaveLen(1))
				g.Expect(fires).To(gomega.HaveLen(1), "the deactivation timer should fire:%s", spec.Render(d))
				g.Expect(fires[0].T - starts[0].T).To(gomega.Equal(deactivationTimeout))
				var gone []trace.Event
				for _, e := range subchannelStates(tr, "b2/ipv4") {
					if e.Kind == trace.KindSubchannelShutdown {
						gone = append(gone, e)
					}
				}
				g.Expect(gone).To(gomega.HaveLen(1), "destroying p1 shuts its subchannel down")
				g.Expect(gone[0].T).To(gomega.Equal(fires[0].T), "p1 is destroyed when the timer fires, not before")
				g.Expect(spec.RPCResult(g, tr, "r3").Backend).To(gomega.Equal("b1"), "p0 still serves")
			}},
		},
	}
}
