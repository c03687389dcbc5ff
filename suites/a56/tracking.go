package a56

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// failoverTimerDroppedPrimary: p0's backend drops SYNs, so its pick_first
// stays CONNECTING (its connect deadline is 20 s); priority waits on p0 for
// its 10 s failover timer, then creates p1, which serves.
func failoverTimerDroppedPrimary() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Labels: []string{spec.LabelSlow},
		Scenario: scenario.New("failover-timer-dropped-primary").
			Describe("p0 on b1 drops SYNs, p1 on b2 is healthy; r1 (wait for ready) at 1 ms").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("", pickFirst("p0"), pickFirst("p1"))).
			At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
			At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(15 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-FAILOVER-TIMER-ON-CREATE", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				starts := ofTimer(timers(tr, timerFailover), trace.KindTimerStart)
				g.Expect(starts).To(gomega.HaveLen(2), "one failover timer per child created:%s", spec.Render(starts))
				for i, a := range []scenario.Addr{"b1/ipv4", "b2/ipv4"} {
					scs := subchannelsFor(tr, a)
					g.Expect(scs).NotTo(gomega.BeEmpty(), "p%d was never created", i)
					spec.RequireSteadyMachine(tr, min(starts[i].T, scs[0].T), max(starts[i].T, scs[0].T), "reaction to its stimulus")
					g.Expect(starts[i].T).To(beAbout(scs[0].T, spec.Within(tr, labSlack)),
						"p%d's failover timer should start when p%d is created", i, i)
					g.Expect(starts[i].Duration).To(gomega.Equal(failoverTimeout))
				}
			}},
			{Requirement: "A56-FAILOVER-TIMER-10S", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				f := timers(tr, timerFailover)
				starts, fires := ofTimer(f, trace.KindTimerStart), ofTimer(f, trace.KindTimerFire)
				g.Expect(fires).To(gomega.HaveLen(1), "p0's failover timer fires:%s", spec.Render(f))
				syn1, syn2 := firstSYN(g, tr, "b1/ipv4").T, firstSYN(g, tr, "b2/ipv4").T
				spec.RequireSteadyMachine(tr, starts[0].T, fires[0].T, "10 s failover timer")
				spec.RequireSteadyMachine(tr, syn1, syn2, "10 s between the children's first attempts")
				// The policy's own events: a timer fires no earlier than its
				// duration after it started.
				g.Expect(fires[0].T-starts[0].T).To(gomega.And(gomega.BeNumerically(">=", failoverTimeout),
					gomega.BeNumerically("<=", failoverTimeout+spec.TimerWithin(tr))), "p0's failover timer, from its start to its firing")
				g.Expect(syn2-syn1).To(beAbout(failoverTimeout, spec.TimerWithin(tr)), "p1 is tried 10 s after p0")
				g.Expect(spec.RPCResult(g, tr, "r1").Backend).To(gomega.Equal("b2"))
				g.Expect(spec.RPCResult(g, tr, "r1").T).To(beAbout(failoverTimeout, spec.Within(tr, labSlack)+10*time.Millisecond))
			}},
			{Requirement: "A56-CHOOSE-PENDING-TIMER", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				fire := ofTimer(timers(tr, timerFailover), trace.KindTimerFire)
				g.Expect(fire).NotTo(gomega.BeEmpty())
				before := between(tr.Events, 0, fire[0].T)
				for _, e := range balancerStates(&trace.Trace{Events: before}) {
					g.Expect(e.State).To(gomega.Equal("CONNECTING"), "while p0's timer runs, priority reports p0: %s", e.String())
				}
				expectNone(g, trace.Select(before, trace.OfKind(trace.KindRPCResult)), "r1 waits on p0")
			}},
			{Requirement: "A56-LAZY-CREATE", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				fire := ofTimer(timers(tr, timerFailover), trace.KindTimerFire)
				g.Expect(fire).NotTo(gomega.BeEmpty())
				scs := subchannelsFor(tr, "b2/ipv4")
				g.Expect(scs).NotTo(gomega.BeEmpty())
				g.Expect(scs[0].T).To(gomega.BeNumerically(">=", fire[0].T), "p1 is created only when choosing reaches it")
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}

// repeatedConnecting is a child that reports CONNECTING twice in a row: p0
// is a weighted_target over one locality (l1, pick_first on b1), and a
// weighted_target reports its aggregate state, with a new picker, on every
// update, repeats included. p0 serves r0; b1 goes down (p0 IDLE, since it
// was READY) and then drops SYNs; r1 makes p0 connect (IDLE → CONNECTING,
// which starts the failover timer in both revisions); at 5.2 s the same
// resolver update makes p0 report CONNECTING again.
func repeatedConnecting(name, revision string) *scenario.Scenario {
	return scenario.New(name).
		Describe("p0 = weighted_target{l1: pick_first on b1}, p1 on b2; b1 lost at 100 ms then dropping; r1 at 200 ms; the same resolver update at 5.2 s").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("priority_experimental", priorityConfig(revision, weightedTarget("p0", "l1"), pickFirst("p1"))).
		At(0, scenario.Resolve(at("b1/ipv4", "p0/l1"), at("b2/ipv4", "p1"))).
		At(time.Millisecond, scenario.RPC("r0", scenario.WaitForReady())).
		At(100*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Down)).
		At(150*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Drop)).
		At(connectingAt, scenario.RPC("r1", scenario.WaitForReady())).
		At(repeatAt, scenario.Resolve(at("b1/ipv4", "p0/l1"), at("b2/ipv4", "p1"))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(20 * time.Second).
		MustBuild()
}

const (
	connectingAt = 200 * time.Millisecond  // r1: p0 goes IDLE → CONNECTING
	repeatAt     = 5200 * time.Millisecond // p0 reports CONNECTING again
)

// connectingTimers are the failover timer events from r1 on (p0's creation
// at 0 started and stopped one of its own).
func connectingTimers(g gomega.Gomega, tr *trace.Trace) []trace.Event {
	f := timers(tr, timerFailover)
	g.Expect(f).NotTo(gomega.BeEmpty())
	return between(f, spec.RPCStart(g, tr, "r1"), time.Hour)
}

// repeatedConnectingSeed: the seed restarts the failover timer on the
// repeated CONNECTING, so failover comes 10 s after 5.2 s.
func repeatedConnectingSeed() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Labels:   []string{spec.LabelSlow},
		Scenario: repeatedConnecting("repeated-connecting-seed", ""),
		Checks: []spec.Check{
			{Requirement: "A56-FAILOVER-TIMER-EVERY-CONNECTING", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				r1 := spec.RPCResult(g, tr, "r1")
				spec.RequireSteadyMachine(tr, connectingAt, repeatAt, "failover timer's start at CONNECTING and at the repeated CONNECTING")
				spec.RequireSteadyMachine(tr, repeatAt, r1.T, "10 s failover timer restarted at the repeated CONNECTING, to r1's failover")
				f := connectingTimers(g, tr)
				starts := ofTimer(f, trace.KindTimerStart)
				g.Expect(len(starts)).To(gomega.BeNumerically(">=", 2), "failover timers from r1 on:%s", spec.Render(f))
				g.Expect(starts[0].T).To(beAbout(connectingAt, slack), "IDLE → CONNECTING starts the timer")
				g.Expect(starts[1].T).To(beAbout(repeatAt, slack), "the repeated CONNECTING restarts it:%s", spec.Render(f))
				fires := ofTimer(f, trace.KindTimerFire)
				g.Expect(fires).NotTo(gomega.BeEmpty())
				g.Expect(fires[0].T).To(beAbout(repeatAt+failoverTimeout, slack), "the restarted timer fires:%s", spec.Render(f))
				g.Expect(r1.Backend).To(gomega.Equal("b2"))
				g.Expect(r1.T).To(beAbout(repeatAt+failoverTimeout, slack+10*time.Millisecond), "failover 10 s after the repeated CONNECTING")
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}

// repeatedConnectingLatest: the latest revision ignores the repeated
// CONNECTING, so failover comes 10 s after 200 ms.
func repeatedConnectingLatest() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Labels:   []string{spec.LabelSlow},
		Scenario: repeatedConnecting("repeated-connecting-latest", "latest"),
		Checks: []spec.Check{
			{Requirement: "A56-FAILOVER-TIMER-NEW-CONNECTING", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				r1 := spec.RPCResult(g, tr, "r1")
				spec.RequireSteadyMachine(tr, connectingAt, r1.T, "10 s failover timer started at CONNECTING, to r1's failover")
				f := connectingTimers(g, tr)
				starts := ofTimer(f, trace.KindTimerStart)
				g.Expect(starts).NotTo(gomega.BeEmpty(), "IDLE → CONNECTING starts the timer")
				g.Expect(starts[0].T).To(beAbout(connectingAt, slack), "IDLE → CONNECTING starts the timer")
				expectNone(g, between(f, repeatAt-slack, repeatAt+slack+1), "the repeated CONNECTING leaves the timer alone")
				fires := ofTimer(f, trace.KindTimerFire)
				g.Expect(fires).NotTo(gomega.BeEmpty())
				g.Expect(fires[0].T).To(beAbout(connectingAt+failoverTimeout, slack), "the first timer fires:%s", spec.Render(f))
				g.Expect(r1.Backend).To(gomega.Equal("b2"))
				g.Expect(r1.T).To(beAbout(connectingAt+failoverTimeout, slack+10*time.Millisecond), "failover 10 s after the change to CONNECTING")
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}

// timerFires: p0's backend drops SYNs (p0 stays CONNECTING until 20 s),
// p1's refuses. When p0's failover timer fires at 10 s, p1 is created and
// fails at once. r1, without wait-for-ready and with a 2 s deadline, is sent
// at 11 s: the revisions differ on what it meets.
func timerFires(name, revision string) *scenario.Scenario {
	return scenario.New(name).
		Describe("p0 on b1 drops SYNs, p1 on b2 refuses; r1 (no wait for ready, 2 s deadline) at 11 s").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("priority_experimental", priorityConfig(revision, pickFirst("p0"), pickFirst("p1"))).
		At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
		At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
		At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
		At(rpcAt, scenario.RPC("r1", scenario.Deadline(2*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(15 * time.Second).
		MustBuild()
}

const (
	rpcAt = 11 * time.Second
	// p1Retries is when p1 (created at 10 s) may first retry b2: after the
	// shortest first backoff, 0.8 s.
	p1Retries = failoverTimeout + 800*time.Millisecond
)

// p1Failed is when p1's subchannel (b2) first reported TRANSIENT_FAILURE.
func p1Failed(g gomega.Gomega, tr *trace.Trace) time.Duration {
	fs := failures(tr, "b2/ipv4")
	g.Expect(fs).NotTo(gomega.BeEmpty(), "p1 never failed")
	return fs[0].T
}

// timerFiresSeed: the timer makes p0 count as TRANSIENT_FAILURE; with p1
// failed too, no child is CONNECTING, so the last priority (p1, failing) is
// reported and r1 fails at once.
func timerFiresSeed() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Labels:   []string{spec.LabelSlow},
		Scenario: timerFires("failover-timer-fires-seed", ""),
		Checks: []spec.Check{
			{Requirement: "A56-FAILOVER-TIMER-FIRES-AS-TF", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				failed := p1Failed(g, tr)
				spec.RequireSteadyMachine(tr, 0, failed, "10 s failover timer, to p1's failure")
				g.Expect(failed).To(beAbout(failoverTimeout, spec.Within(tr, labSlack)+5*time.Millisecond))
				g.Expect(stateAt(tr, failed+spec.Within(tr, labSlack))).To(gomega.Equal("TRANSIENT_FAILURE"),
					"p0 counts as TRANSIENT_FAILURE after its timer, so the channel fails")
				expectNone(g, failures(tr, "b1/ipv4"), "p0's own pick_first is still CONNECTING: the failure is the timer's")
				r1 := spec.RPCResult(g, tr, "r1")
				g.Expect(r1.Code).To(gomega.Equal("UNAVAILABLE"))
				spec.RequireSteadyMachine(tr, spec.RPCStart(g, tr, "r1"), r1.T, "failure of r1 at once")
				g.Expect(r1.T-spec.RPCStart(g, tr, "r1")).To(gomega.BeNumerically("<", spec.Within(tr, labSlack)+10*time.Millisecond), "r1 fails at once")
			}},
			{Requirement: "A56-CHOOSE-LAST-FALLBACK", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				failed := p1Failed(g, tr)
				for _, e := range between(balancerStates(tr), failed+spec.Within(tr, labSlack), time.Hour) {
					g.Expect(e.State).To(gomega.Equal("TRANSIENT_FAILURE"), "the last priority's state is reported: %s", e.String())
				}
				r1 := spec.RPCResult(g, tr, "r1")
				g.Expect(r1.Code).To(gomega.Equal("UNAVAILABLE"))
				g.Expect(r1.Err).To(gomega.ContainSubstring(spec.Addr(tr, "b2/ipv4")), "r1 fails with p1's picker, whose error names b2")
			}},
		},
		Agreement: agreement(p1Retries, labSlack, lbKinds...),
	}
}

// timerFiresLatest: the timer re-runs the choice and leaves p0 CONNECTING;
// with p1 failed, the CONNECTING fallback picks p0 again, so r1 waits (for
// its deadline).
func timerFiresLatest() spec.Spec {
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Labels:   []string{spec.LabelSlow},
		Scenario: timerFires("failover-timer-fires-latest", "latest"),
		Checks: []spec.Check{
			{Requirement: "A56-FAILOVER-TIMER-FIRES-RECHOOSE", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				fires := ofTimer(timers(tr, timerFailover), trace.KindTimerFire)
				g.Expect(fires).To(gomega.HaveLen(1))
				spec.RequireSteadyMachine(tr, 0, fires[0].T, "10 s failover timer")
				g.Expect(fires[0].T).To(beAbout(failoverTimeout, spec.Within(tr, labSlack)))
				g.Expect(subchannelsFor(tr, "b2/ipv4")).NotTo(gomega.BeEmpty(), "the choice re-run at the timer reaches p1")
				end := spec.RPCResult(g, tr, "r1").T
				for _, e := range between(balancerStates(tr), 0, end) {
					g.Expect(e.State).NotTo(gomega.Equal("TRANSIENT_FAILURE"), "p0's state stays CONNECTING: %s", e.String())
				}
			}},
			{Requirement: "A56-CHOOSE-CONNECTING-FALLBACK", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				failed := p1Failed(g, tr)
				g.Expect(stateAt(tr, failed+spec.Within(tr, labSlack))).To(gomega.Equal("CONNECTING"),
					"with p1 failed and no timer pending, the CONNECTING p0 is chosen")
				r1 := spec.RPCResult(g, tr, "r1")
				g.Expect(r1.Code).To(gomega.Equal("DEADLINE_EXCEEDED"), "r1 waits on p0's queueing picker")
				start := spec.RPCStart(g, tr, "r1")
				spec.RequireSteadyMachine(tr, start, r1.T, "2 s deadline of r1")
				g.Expect(r1.T - start).To(beAbout(2*time.Second, spec.Within(tr, labSlack)))
			}},
		},
		Agreement: agreement(p1Retries, labSlack, lbKinds...),
	}
}

// connectingAfterTF: p0 is a round_robin whose only endpoint (b1) refuses:
// p0 reports TRANSIENT_FAILURE and p1 serves. A resolver update then gives
// p0 a second endpoint (b3, dropping SYNs), and round_robin reports
// CONNECTING; since p0 has not been READY or IDLE since its failure, no
// failover timer starts and p1 keeps serving.
func connectingAfterTF() spec.Spec {
	const grow = 300 * time.Millisecond
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Scenario: scenario.New("connecting-after-tf").
			Describe("p0 = round_robin on b1 (refuses), p1 on b2; at 300 ms p0 also gets b3 (drops SYNs) and reports CONNECTING; r2 at 400 ms").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
			LB("priority_experimental", priorityConfig("", roundRobin("p0"), pickFirst("p1"))).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b3/ipv4", scenario.Drop)).
			At(0, scenario.Resolve(at("b1/ipv4", "p0"), at("b2/ipv4", "p1"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			At(grow, scenario.Resolve(at("b1/ipv4", "p0"), at("b3/ipv4", "p0"), at("b2/ipv4", "p1"))).
			At(400*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady())).
			FinishAfterEveryRPC().
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A56-FAILOVER-TIMER-NOT-AFTER-TF", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.RPCResult(g, tr, "r1").Backend).To(gomega.Equal("b2"))
				scs := subchannelsFor(tr, "b3/ipv4")
				g.Expect(scs).To(gomega.HaveLen(1), "p0 gets b3 and connects to it (round_robin: CONNECTING)")
				after := between(tr.Events, grow, time.Hour)
				expectNone(g, trace.Select(after, trace.OfKind(trace.KindTimerStart)), "CONNECTING after TRANSIENT_FAILURE starts no failover timer")
				for _, e := range balancerStates(&trace.Trace{Events: after}) {
					g.Expect(e.State).To(gomega.Equal("READY"), "p1 stays in use: %s", e.String())
				}
				r2 := spec.RPCResult(g, tr, "r2")
				g.Expect(r2.Backend).To(gomega.Equal("b2"))
				start := spec.RPCStart(g, tr, "r2")
				spec.RequireSteadyMachine(tr, start, r2.T, "r2, served at once by p1")
				g.Expect(r2.T - start).To(gomega.BeNumerically("<", spec.Within(tr, labSlack)+10*time.Millisecond))
			}},
		},
		Agreement: agreement(0, labSlack, lbKinds...),
	}
}
