package a56

import (
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// prioritiesListOrder: three healthy children whose names sort in another
// order than their priorities; the first listed is used, and the others are
// never created.
func prioritiesListOrder() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionConfig,
		Scenario: scenario.New("priorities-list-order").
			Describe("priorities [pz, pa, pm] on b1, b2, b3, all healthy: pz (listed first, named last) serves, pa and pm are never created").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("", pickFirst("pz"), pickFirst("pa"), pickFirst("pm"))).
			At(0, scenario.Resolve(at("b1/ipv4", "pz"), at("b2/ipv4", "pa"), at("b3/ipv4", "pm"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			At(50*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady())).
			FinishAfterEveryRPC().
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-CONFIG-SHAPE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, id := range []string{"r1", "r2"} {
					g.Expect(spec.RPCResult(g, tr, id).Backend).To(gomega.Equal("b1"),
						"%s: the priorities list, not the children's names, orders the children: pz is the highest", id)
				}
			}},
			{Requirement: "A56-ROUTE-HIGHEST-READY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				states := spec.ChannelStates(tr)
				g.Expect(states).NotTo(gomega.BeEmpty())
				g.Expect(states[len(states)-1].State).To(gomega.Equal("READY"))
				g.Expect(spec.RPCResult(g, tr, "r2").Backend).To(gomega.Equal("b1"), "the highest READY priority, pz, should serve")
			}},
			{Requirement: "A56-LAZY-CREATE", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectNone(g, subchannelsFor(tr, "b2/ipv4"), "pa is below a usable priority: never created")
				expectNone(g, subchannelsFor(tr, "b3/ipv4"), "pm is below a usable priority: never created")
				starts := ofTimer(timers(tr, timerFailover), trace.KindTimerStart)
				g.Expect(starts).To(gomega.HaveLen(1), "one child created, one failover timer:%s", spec.Render(starts))
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}

// ignoreReresolution: p0 (ignore_reresolution_requests) and p1 both fail
// over and over; p2 serves. Each failed round of a pick_first asks for
// re-resolution: p1's requests reach the channel, p0's do not.
func ignoreReresolution() spec.Spec {
	p0 := pickFirst("p0")
	p0.ignore = true
	return spec.Spec{
		Doc: requirement.A56, Section: sectionConfig,
		Scenario: scenario.New("ignore-reresolution-requests").
			Describe("p0 (ignore_reresolution_requests) on b1 and p1 on b2 refuse, p2 on b3 serves; run until b2 has refused 3 times").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("", p0, pickFirst("p1"), pickFirst("p2"))).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"), at("b3/ipv4", "p2"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			// The next round is a backoff (≥ 0.8 × 1.6² s) away: 100 ms
			// after the third lets its re-resolution request in, and no
			// other.
			AfterDelay(scenario.On("rst").WithAddr("b2/ipv4").Times(3), 100*time.Millisecond, scenario.Finish()).
			End(10 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-IGNORE-RERESOLUTION", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				fail1 := failures(tr, "b1/ipv4")
				fail2 := failures(tr, "b2/ipv4")
				g.Expect(len(fail1)).To(gomega.BeNumerically(">=", 2), "p0's pick_first should fail round after round:%s", spec.Render(fail1))
				g.Expect(fail2).To(gomega.HaveLen(3), "p1's pick_first should fail 3 rounds")
				rn := spec.Of(tr, trace.KindResolveNow)
				g.Expect(rn).To(gomega.HaveLen(len(fail2)),
					"one re-resolution request per failed round of p1 (passed up), none for p0's %d (dropped):\nfailures of b2:%s\nre-resolution requests:%s",
					len(fail1), spec.Render(fail2), spec.Render(rn))
				for i, f := range fail2 {
					g.Expect(rn[i].T-f.T).To(gomega.BeNumerically("~", 0, spec.Within(tr, labSlack)),
						"re-resolution request %d should come with b2's failure at %s", i+1, trace.FormatT(f.T))
				}
			}},
		},
		// Retries from 800 ms on (the shortest first backoff).
		Agreement: agreement(800*time.Millisecond, labSlack, slices.Concat(lbKinds, []trace.Kind{trace.KindResolveNow})...),
	}
}

// failures are the TRANSIENT_FAILURE reports of the subchannels for a.
func failures(tr *trace.Trace, a scenario.Addr) []trace.Event {
	return trace.Select(spec.SubchannelEvents(tr, spec.Addr(tr, a), trace.KindSubchannelState), func(e trace.Event) bool {
		return e.State == "TRANSIENT_FAILURE"
	})
}

// nestedPaths: priority over a weighted_target over two localities; each
// leaf gets exactly the endpoint whose path leads to it.
func nestedPaths() spec.Spec {
	const n = 20
	b := scenario.New("nested-paths").
		Describe("p0 is a weighted_target over l1 (b1, path p0/l1) and l2 (b2, path p0/l2); p1 on b3; 20 RPCs").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
		LB("priority_experimental", priorityConfig("", weightedTarget("p0", "l1", "l2"), pickFirst("p1"))).
		At(0, scenario.Resolve(at("b1/ipv4", "p0/l1"), at("b2/ipv4", "p0/l2"), at("b3/ipv4", "p1")))
	for i := 1; i <= n; i++ {
		b.At(time.Duration(5+5*i)*time.Millisecond, scenario.RPC(fmt.Sprintf("r%d", i), scenario.WaitForReady()))
	}
	return spec.Spec{
		Doc: requirement.A56, Section: sectionHier,
		Scenario: b.After(scenario.On("rpc-result").Times(n), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-HIER-PATH-SPLIT", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectNone(g, subchannelsFor(tr, "b3/ipv4"), "b3's path leads to p1, which is never used")
				for _, a := range []scenario.Addr{"b1/ipv4", "b2/ipv4"} {
					scs := subchannelsFor(tr, a)
					g.Expect(scs).To(gomega.HaveLen(1), "p0 should receive %s once:%s", a, spec.Render(scs))
				}
			}},
			{Requirement: "A56-HIER-PATH-NESTED", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, e := range spec.Of(tr, trace.KindSubchannelNew) {
					g.Expect(e.Addrs).To(gomega.HaveLen(1), "each leaf should receive only its own address: %s", e.String())
				}
				by := map[string]int{}
				for _, e := range spec.Of(tr, trace.KindRPCResult) {
					by[e.Backend]++
				}
				g.Expect(by).To(gomega.HaveKey("b1"), "l1 (b1) should serve some of the %d RPCs: %v", n, by)
				g.Expect(by).To(gomega.HaveKey("b2"), "l2 (b2) should serve some of the %d RPCs: %v", n, by)
				g.Expect(by["b1"]+by["b2"]).To(gomega.Equal(n), "every RPC answered by a leaf of p0: %v", by)
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}

// addressUpdateForwarded: p0 serves from b1; the same resolver update again
// changes nothing; then an update gives p0 b3 instead, and p0 serves from b3.
func addressUpdateForwarded() spec.Spec {
	const same, moved = 50 * time.Millisecond, 100 * time.Millisecond
	return spec.Spec{
		Doc: requirement.A56, Section: sectionUpdates,
		Scenario: scenario.New("update-forwarded").
			Describe("p0 on b1, p1 on b2; at 50 ms the same update again, at 100 ms p0's endpoint becomes b3").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("", pickFirst("p0"), pickFirst("p1"))).
			At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			At(same, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
			At(moved, scenario.Resolve(at("b3/ipv4", "p0"), at("b2/ipv4", "p1"))).
			At(150*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady())).
			FinishAfterEveryRPC().
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-UPDATE-FORWARDED", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.RPCResult(g, tr, "r1").Backend).To(gomega.Equal("b1"))
				scs := subchannelsFor(tr, "b3/ipv4")
				g.Expect(scs).To(gomega.HaveLen(1), "p0 should get b3 from the update")
				spec.RequireSteadyMachine(tr, min(scs[0].T, moved), max(scs[0].T, moved), "p0 getting b3 when the update arrives")
				g.Expect(scs[0].T).To(beAbout(moved, spec.Within(tr, labSlack)), "p0 should get b3 when the update arrives")
				g.Expect(spec.RPCResult(g, tr, "r2").Backend).To(gomega.Equal("b3"), "p0 uses its new address")
				expectNone(g, subchannelsFor(tr, "b2/ipv4"), "p1 was never needed")
			}},
			{Requirement: "A56-CHOOSE-IDEMPOTENT", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				w := between(tr.Events, same, moved)
				expectNone(g, trace.Select(w, trace.OfKind(trace.KindTimerStart, trace.KindSubchannelNew, trace.KindSubchannelShutdown)),
					"the same update again should have no side effect")
				for _, e := range balancerStates(&trace.Trace{Events: w}) {
					g.Expect(e.State).To(gomega.Equal("READY"), "the same update again should give the same choice: %s", e.String())
				}
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}

// updateChoosesOnce: p0 is back in use and p1 deactivated (READY); then a
// resolver update routes no endpoint to either child, so both pick_firsts
// report TRANSIENT_FAILURE while being updated, p0 first. Choosing after
// p0's report alone would reactivate p1 and report its READY picker; choosing
// once, after both are updated, reports only the last priority's failure.
func updateChoosesOnce() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionUpdates,
		Scenario: primaryBack("update-chooses-once",
			"p0 on b1 back in use after refusing, p1 on b2 deactivated; then an update whose only endpoint's path leads to no child").
			AfterDelay(scenario.On("rpc-result").WithRPC("r2"), 100*time.Millisecond, scenario.Resolve(at("b1/ipv4", "nowhere"))).
			AfterDelay(scenario.On("rpc-result").WithRPC("r2"), 200*time.Millisecond, scenario.RPC("r3")).
			FinishAfterEveryRPC().
			End(10 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-UPDATE-CHOOSE-ONCE", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.RPCResult(g, tr, "r2").Backend).To(gomega.Equal("b1"), "p0 is back in use before the update")
				var update time.Duration
				for _, e := range spec.Of(tr, trace.KindResolverUpdate) {
					if e.T > spec.RPCResult(g, tr, "r2").T {
						update = e.T
						break
					}
				}
				g.Expect(update).NotTo(gomega.BeZero(), "no second resolver update")
				after := between(balancerStates(tr), update, time.Hour)
				g.Expect(len(after)).To(gomega.Equal(1), "one choice for the whole update:%s", spec.Render(after))
				g.Expect(after[0].State).To(gomega.Equal("TRANSIENT_FAILURE"), "both children failed: the last priority's state")
				g.Expect(spec.RPCResult(g, tr, "r3").Code).To(gomega.Equal("UNAVAILABLE"))
			}},
			{Requirement: "A56-CHOOSE-CREATES-REACTIVATES", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				d := timers(tr, timerDeactivation)
				stops := ofTimer(d, trace.KindTimerStop)
				g.Expect(stops).To(gomega.HaveLen(1), "the scan reaches p1 and reactivates it:%s", spec.Render(d))
				g.Expect(stops[0].T).To(gomega.BeNumerically(">", spec.RPCResult(g, tr, "r2").T))
				g.Expect(stops[0].T).To(gomega.BeNumerically("<", spec.RPCStart(g, tr, "r3")))
			}},
		},
		Agreement: agreement(0, backoffSlack, lbKinds...),
	}
}
