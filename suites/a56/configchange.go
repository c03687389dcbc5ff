package a56

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// The specs in this file change the LB config during the run (the
// scenario's config step): children move, leave the config and come back.
// Every run ends before the first backoff of a refused connection could end
// (1 s − 20 %), so no retry muddles the comparison of the two modes.

// configAgreement is agreement over lbKinds without the deactivation
// timers' stops: these runs end with a child still deactivated, and the
// lab's channel, closed when the run ends, stops its timer (the simulated
// trace ends before its channel closes). The checks look at the stops that
// matter (reactivation) in each mode.
func configAgreement() *compare.Options {
	o := agreement(0, labSlack, lbKinds...)
	o.Select = append(o.Select, func(e trace.Event) bool {
		return e.Kind != trace.KindTimerStop || e.Timer != timerDeactivation
	})
	return o
}

// configUpdates are the times of the run's config updates; the check fails
// unless there are n.
func configUpdates(g gomega.Gomega, tr *trace.Trace, n int) []time.Duration {
	var out []time.Duration
	for _, e := range spec.Of(tr, trace.KindConfigUpdate) {
		out = append(out, e.T)
	}
	g.ExpectWithOffset(1, out).To(gomega.HaveLen(n), "config updates")
	return out
}

// shutdownsBefore are the shutdowns of the subchannels for a before t (the
// lab's channel shuts everything down when the run ends).
func shutdownsBefore(tr *trace.Trace, a scenario.Addr, t time.Duration) []trace.Event {
	return trace.Select(between(subchannelStates(tr, a), 0, t), trace.OfKind(trace.KindSubchannelShutdown))
}

// freshSYNs are the connection attempts to a (spec.AttemptsTo).
func freshSYNs(tr *trace.Trace, a scenario.Addr) []trace.Event {
	return spec.AttemptsTo(tr.Events, spec.Addr(tr, a))
}

// configNameIsIdentity: p0 (b1) refuses, so p1 (b2) serves r1; at 200 ms the
// config swaps the priorities, naming the same children. p1, now the
// highest, is the same child: READY at once, with its connection; p0, now
// below a READY priority, is deactivated, not rebuilt.
func configNameIsIdentity() spec.Spec {
	kids := []kid{pickFirst("p0"), pickFirst("p1")}
	swapped := []kid{kids[1], kids[0]}
	return spec.Spec{
		Doc: requirement.A56, Section: sectionConfig,
		Scenario: scenario.New("config-name-is-identity").
			Describe("p0 on b1 refuses, p1 on b2 serves r1; at 200 ms the config lists [p1, p0]: the same p1 serves r2 on its connection").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("", kids...)).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			At(200*time.Millisecond, scenario.Config("priority_experimental", priorityConfig("", swapped...))).
			At(201*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady())).
			FinishAfterEveryRPC().
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-CONFIG-NAME-IS-IDENTITY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				swap := configUpdates(g, tr, 1)[0]
				g.Expect(spec.RPCResult(g, tr, "r1").Backend).To(gomega.Equal("b2"))
				r2 := spec.RPCResult(g, tr, "r2")
				g.Expect(r2.Backend).To(gomega.Equal("b2"), "p1, now the highest priority and READY, serves")
				spec.RequireSteadyMachine(tr, spec.RPCStart(g, tr, "r2"), r2.T, "service of r2 at once")
				g.Expect(r2.T-spec.RPCStart(g, tr, "r2")).To(gomega.BeNumerically("<", 100*time.Millisecond),
					"p1 is READY at once: it is the same child")
				// From outside, the connections: a child built anew for a
				// moved name would connect anew (A56, LB Policy
				// Configuration: in Java and Go, recreating a child
				// recreates its connections). b1 refuses, and its next
				// attempt is a backoff (0.8 s at the least) away.
				g.Expect(freshSYNs(tr, "b2/ipv4")).To(gomega.HaveLen(1), "p1 keeps its connection")
				g.Expect(freshSYNs(tr, "b1/ipv4")).To(gomega.HaveLen(1), "p0, moved down, is not rebuilt: no new attempt")
				if !spec.HasPolicy(tr) {
					return
				}
				g.Expect(subchannelsFor(tr, "b2/ipv4")).To(gomega.HaveLen(1), "p1 keeps its subchannel")
				expectNone(g, shutdownsBefore(tr, "b2/ipv4", r2.T), "p1's subchannel is not shut down")
				g.Expect(subchannelsFor(tr, "b1/ipv4")).To(gomega.HaveLen(1), "p0, moved down, is the same child too")
				expectNone(g, shutdownsBefore(tr, "b1/ipv4", r2.T), "p0's subchannel is not shut down")
				expectNone(g, between(ofTimer(timers(tr, timerFailover), trace.KindTimerStart), swap, r2.T+1),
					"no child is created (a new child starts a failover timer)")
				d := ofTimer(timers(tr, timerDeactivation), trace.KindTimerStart)
				g.Expect(d).To(gomega.HaveLen(1), "p0, below the READY p1 now, is deactivated")
				spec.RequireSteadyMachine(tr, min(d[0].T, swap), max(d[0].T, swap), "reaction to its stimulus")
				g.Expect(d[0].T).To(beAbout(swap, slack))
			}},
		},
		Agreement: configAgreement(),
	}
}

// removedThenReadded: p0 (b1) serves r1; at 200 ms the config drops p0 and
// p1 (b2) serves r2; at 400 ms p0 is named again, below the READY p1, and
// p1 serves r3; at 600 ms p0 is listed first again and serves r4.
func removedThenReadded(name, revision string) *scenario.Scenario {
	p0, p1 := pickFirst("p0"), pickFirst("p1")
	return scenario.New(name).
		Describe("p0 on b1 serves r1; 200 ms: config [p1], r2 to b2; 400 ms: config [p1, p0], r3 to b2; 600 ms: config [p0, p1], r4 to b1").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("priority_experimental", priorityConfig(revision, p0, p1)).
		At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
		At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		At(200*time.Millisecond, scenario.Config("priority_experimental", priorityConfig(revision, p1))).
		At(201*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady())).
		At(400*time.Millisecond, scenario.Config("priority_experimental", priorityConfig(revision, p1, p0))).
		At(401*time.Millisecond, scenario.RPC("r3", scenario.WaitForReady())).
		At(600*time.Millisecond, scenario.Config("priority_experimental", priorityConfig(revision, p0, p1))).
		At(601*time.Millisecond, scenario.RPC("r4", scenario.WaitForReady())).
		FinishAfterEveryRPC().
		End(5 * time.Second).
		MustBuild()
}

// servedAsPlanned checks who served the four RPCs of removedThenReadded.
func servedAsPlanned(g gomega.Gomega, tr *trace.Trace) {
	for id, b := range map[string]string{"r1": "b1", "r2": "b2", "r3": "b2", "r4": "b1"} {
		g.ExpectWithOffset(1, spec.RPCResult(g, tr, id).Backend).To(gomega.Equal(b), "%s", id)
	}
}

// removedChildSeed: A56 as first written keeps a removed child for 15
// minutes, deactivated; named again, it stays deactivated until chosen.
func removedChildSeed() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionLifetime,
		Scenario: removedThenReadded("removed-child-seed", ""),
		Checks: []spec.Check{
			{Requirement: "A56-REMOVED-CHILD-RETAINED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				removed := configUpdates(g, tr, 3)[0]
				servedAsPlanned(g, tr)
				// From outside: p0 keeps its connection through its
				// removal, so chosen again it opens none.
				g.Expect(freshSYNs(tr, "b1/ipv4")).To(gomega.HaveLen(1), "p0 is kept, with its connection (a destroyed child would connect anew when chosen again)")
				if !spec.HasPolicy(tr) {
					return
				}
				starts := ofTimer(timers(tr, timerDeactivation), trace.KindTimerStart)
				g.Expect(starts).NotTo(gomega.BeEmpty(), "p0, removed, is deactivated")
				spec.RequireSteadyMachine(tr, min(starts[0].T, removed), max(starts[0].T, removed), "deactivation of p0 when the config drops it")
				g.Expect(starts[0].T).To(beAbout(removed, slack), "p0 is deactivated when the config drops it")
				g.Expect(starts[0].Duration).To(gomega.Equal(deactivationTimeout), "kept for 15 minutes")
				end := spec.RPCResult(g, tr, "r4").T
				expectNone(g, shutdownsBefore(tr, "b1/ipv4", end), "p0 is kept, with its subchannel")
				g.Expect(subchannelsFor(tr, "b1/ipv4")).To(gomega.HaveLen(1), "p0 is never rebuilt")
			}},
			// Deactivated or active, a child below a READY priority looks
			// the same from outside: only the policy's deactivation timer
			// (started, then stopped when the child is chosen) tells.
			{Requirement: "A56-READDED-CHILD-NOT-REACTIVATED", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				cu := configUpdates(g, tr, 3)
				readded, chosen := cu[1], cu[2]
				servedAsPlanned(g, tr)
				d := timers(tr, timerDeactivation)
				g.Expect(d).NotTo(gomega.BeEmpty())
				p0 := d[0].TimerID // the first deactivation is p0's, at its removal
				expectNone(g, between(d, readded, chosen), "named again below a READY priority, p0 stays deactivated")
				var stop *trace.Event
				for i, e := range d {
					if e.TimerID == p0 && e.Kind != trace.KindTimerStart {
						stop = &d[i]
						break
					}
				}
				g.Expect(stop).NotTo(gomega.BeNil(), "p0 is reactivated once chosen:%s", spec.Render(d))
				g.Expect(stop.Kind).To(gomega.Equal(trace.KindTimerStop))
				spec.RequireSteadyMachine(tr, min(stop.T, chosen), max(stop.T, chosen), "reactivation of p0 when the config lists it first")
				g.Expect(stop.T).To(beAbout(chosen, slack), "p0 is reactivated when the config lists it first")
				g.Expect(subchannelsFor(tr, "b1/ipv4")).To(gomega.HaveLen(1), "the same child, with the same subchannel")
				g.Expect(freshSYNs(tr, "b1/ipv4")).To(gomega.HaveLen(1), "and the same connection")
				r4 := spec.RPCResult(g, tr, "r4")
				spec.RequireSteadyMachine(tr, spec.RPCStart(g, tr, "r4"), r4.T, "service of r4 at once")
				g.Expect(r4.T-spec.RPCStart(g, tr, "r4")).To(gomega.BeNumerically("<", 100*time.Millisecond), "p0 serves at once")
			}},
		},
		Agreement: configAgreement(),
	}
}

// removedChildLatest: A56 revised by A115 destroys a removed child at once;
// named again, it is a new child, created when choosing a priority reaches
// it and not before.
func removedChildLatest() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionLifetime,
		Scenario: removedThenReadded("removed-child-latest", "latest"),
		Checks: []spec.Check{
			{Requirement: "A56-REMOVED-CHILD-DESTROYED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				cu := configUpdates(g, tr, 3)
				removed, chosen := cu[0], cu[2]
				servedAsPlanned(g, tr)
				// From outside: p0 was not kept, so chosen again it
				// connects anew.
				g.Expect(freshSYNs(tr, "b1/ipv4")).To(gomega.HaveLen(2), "p0, removed, is not kept: chosen again it opens a new connection")
				if !spec.HasPolicy(tr) {
					return
				}
				gone := shutdownsBefore(tr, "b1/ipv4", chosen)
				g.Expect(gone).To(gomega.HaveLen(1), "p0, removed, is destroyed with its subchannel")
				spec.RequireSteadyMachine(tr, min(gone[0].T, removed), max(gone[0].T, removed), "removal at once")
				g.Expect(gone[0].T).To(beAbout(removed, slack), "at once")
				expectNone(g, between(timers(tr, timerDeactivation), 0, chosen), "no 15-minute retention")
			}},
			{Requirement: "A56-READDED-CHILD-NEW", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				cu := configUpdates(g, tr, 3)
				readded, chosen := cu[1], cu[2]
				servedAsPlanned(g, tr)
				// From outside: the new p0 connects when it is created,
				// so its connection attempt shows when that was.
				syns := freshSYNs(tr, "b1/ipv4")
				g.Expect(syns).To(gomega.HaveLen(2), "p0 named again is a new child, with a new connection:%s", spec.Render(syns))
				spec.RequireSteadyMachine(tr, min(syns[1].T, chosen), max(syns[1].T, chosen), "creation when choosing reaches it")
				g.Expect(syns[1].T).To(beAbout(chosen, slack), "created when choosing reaches it, not when named again")
				if !spec.HasPolicy(tr) {
					return
				}
				scs := subchannelsFor(tr, "b1/ipv4")
				g.Expect(scs).To(gomega.HaveLen(2), "p0 named again is a new child, with a new subchannel:%s", spec.Render(scs))
				spec.RequireSteadyMachine(tr, min(scs[1].T, chosen), max(scs[1].T, chosen), "creation when choosing reaches it")
				g.Expect(scs[1].T).To(beAbout(chosen, slack), "created when choosing reaches it, not when named again")
				expectNone(g, between(ofTimer(timers(tr, timerFailover), trace.KindTimerStart), readded, chosen),
					"named below a READY priority, p0 is not created")
				starts := between(ofTimer(timers(tr, timerFailover), trace.KindTimerStart), chosen, spec.RPCResult(g, tr, "r4").T+1)
				g.Expect(starts).To(gomega.HaveLen(1), "the new p0 starts its failover timer")
			}},
		},
		Agreement: configAgreement(),
	}
}
