package a61

import (
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/match"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/monitor"
	"github.com/conformlab/conform/suites/spec"
)

// The Happy Eyeballs specs beyond the first two (specs.go), in the order of
// the section's rules: the pass and its timers, the end of a failed pass,
// what follows it, new lists, and the state the pass finds a subchannel in.

// heThreeDropped: three addresses that all hang. The pass overlaps the three
// attempts a Connection Attempt Delay apart and arms no timer after the last.
func heThreeDropped() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-three-dropped").
			Describe("b1, b2 and b3 drop SYNs; the client gets [b1, b2, b3] (IPv4); nothing answers for 1.2 s").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
			At(0, scenario.Fault("b2/ipv4", scenario.Drop)).
			At(0, scenario.Fault("b3/ipv4", scenario.Drop)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4"))).
			End(1200 * time.Millisecond).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-FIRST-PASS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireScenarioOrder(tr)
				want := addrs(tr, "b1/ipv4", "b2/ipv4", "b3/ipv4")
				absentUnlessAttempted(tr, want[1], 0, "no Connection Attempt Delay moved on from the hung first attempt")
				g.Expect(tr).To(match.HaveAttemptOrder(want...))
				// Overlapping, not serial: no attempt had failed when the
				// next one started, so all three were in flight at once.
				for _, a := range want {
					g.Expect(spec.ConnectionFailures(tr, a)).To(gomega.BeEmpty(), "no attempt fails within 1.2 s (%s); the next ones were started by the timer", a)
				}
				spec.RequireSteadyBetweenAttempts(tr, want[0], want[1], "first 250 ms Connection Attempt Delay")
				spec.RequireSteadyBetweenAttempts(tr, want[1], want[2], "second 250 ms Connection Attempt Delay")
				g.Expect(tr).To(match.HaveGapBetweenAttempts(want[0], want[1], 250*time.Millisecond, spec.TimerWithin(tr)))
				g.Expect(tr).To(match.HaveGapBetweenAttempts(want[1], want[2], 250*time.Millisecond, spec.TimerWithin(tr)))
			}},
			{Requirement: "A61-HE-TIMER-UNLESS-LAST", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireScenarioOrder(tr)
				last := spec.Addr(tr, "b3/ipv4")
				absentUnlessAttempted(tr, spec.Addr(tr, "b2/ipv4"), 0, "no Connection Attempt Delay moved on from the hung first attempt")
				as := attempts(tr, 0)
				g.Expect(as).To(gomega.HaveLen(3), "one attempt per address, and none after the last:%s", spec.Render(as))
				g.Expect(as[2].Addr).To(gomega.Equal(last))
				if starts := spec.Of(tr, trace.KindTimerStart); len(spec.Of(tr, trace.KindSubchannelNew)) > 0 {
					// Where the policy's timers are visible: one per address but the last.
					g.Expect(starts).To(gomega.HaveLen(2), "timers:%s", spec.Render(starts))
				}
			}},
			monitor.HEAttemptDelay.Check(),
		},
		Agreement: firstPassSYNs(time.Second),
	}
}

// heDelayClamp: a configured Connection Attempt Delay outside [100 ms, 2 s]
// acts as the nearer bound. connectionAttemptDelay is the reference's knob
// (A61 lets an implementation have one: a MAY); an implementation without
// it cannot express the scenario.
func heDelayClamp(name, configured string, want time.Duration) spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New(name).
			Describe("the Connection Attempt Delay is configured as "+configured+"; b1's IPv6 address drops SYNs; the client gets [b1/ipv6, b1/ipv4]").
			Backend("b1", scenario.Dual).
			LB("pick_first", `{"connectionAttemptDelay":"`+configured+`"}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-DELAY-CLAMP", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				v6, v4 := spec.Addr(tr, "b1/ipv6"), spec.Addr(tr, "b1/ipv4")
				spec.RequirePromptFirstAttempt(tr)
				spec.RequireSteadyBetweenAttempts(tr, v6, v4, want.String()+" Connection Attempt Delay")
				g.Expect(tr).To(match.HaveGapBetweenAttempts(v6, v4, want, spec.TimerWithin(tr)))
			}},
		},
		Agreement: synAgreement,
	}
}

// heAllRefused: every address refuses. The first pass ends only when both
// have failed; then re-resolution and TRANSIENT_FAILURE, which sticks while
// every subchannel is retried on its own backoff, with re-resolution after
// each round of failures; the faults are cleared at 1.5 s and the third
// round connects.
func heAllRefused() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-all-refused").
			Describe("both of b1's addresses refuse until 1.5 s; the client gets [b1/ipv6, b1/ipv4]").
			Backend("b1", scenario.Dual).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Reset)).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
			At(1500*time.Millisecond, scenario.Clear("b1/ipv6")).
			At(1500*time.Millisecond, scenario.Clear("b1/ipv4")).
			After(scenario.On("balancer-state").WithState("READY"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-PASS-ENDS-ALL-FAILED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				end := passEnd(g, tr, "b1/ipv6", "b1/ipv4")
				tf := firstState(tr, "TRANSIENT_FAILURE")
				g.Expect(tf).NotTo(gomega.BeNil(), "the pass never ended with TRANSIENT_FAILURE")
				g.Expect(tf.T).To(gomega.BeNumerically(">=", end), "TRANSIENT_FAILURE before every address had failed")
			}},
			{Requirement: "A61-HE-NO-TF-DURING-PASS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// Whichever address the client tried first (a client that
				// resolves through DNS may sort them), the pass is over
				// when the second one fails.
				end := passEnd(g, tr, "b1/ipv6", "b1/ipv4")
				first := min(firstFailure(tr, spec.Addr(tr, "b1/ipv6")), firstFailure(tr, spec.Addr(tr, "b1/ipv4")))
				g.Expect(first).To(gomega.BeNumerically("<", end), "the addresses should fail one after the other")
				during := trace.Select(spec.ChannelStates(tr), func(e trace.Event) bool { return e.T >= first && e.T < end })
				g.Expect(during).NotTo(gomega.ContainElement(gomega.HaveField("State", "TRANSIENT_FAILURE")),
					"after the first address failed and before the second did")
			}},
			{Requirement: "A61-HE-PASS-END-RERESOLVE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// "At that point, we will request re-resolution": the
				// request answers the pass's end. It comes within the
				// slack of a reaction at once (spec.ReactionWithin) of the
				// end, the machine steady in between, and so before the
				// client's next connection attempt (the next round, after
				// a backoff; an attempt within that slack of the end, to a
				// subchannel whose backoff was over, is "at that point"
				// too, in either order).
				end := passEnd(g, tr, "b1/ipv6", "b1/ipv4")
				slack := spec.ReactionWithin(tr, 10*time.Millisecond)
				spec.RequireReResolutionVisible(tr)
				// b1/ipv6's failure is in the middle of the pass, where
				// pick_first asks for nothing.
				spec.RequireRequestsAttributable(tr, []time.Duration{firstFailure(tr, spec.Addr(tr, "b1/ipv6"))}, []time.Duration{end}, slack)
				rr := spec.ReResolutions(tr)
				g.Expect(rr).NotTo(gomega.BeEmpty(), "no re-resolution at all")
				// The channel's requests may include the subchannels' own
				// (one per failure in grpc-go): without the policy's
				// events, the policy's is one of those at the end of the
				// pass; with them, the first one comes no earlier.
				if spec.HasPolicy(tr) {
					g.Expect(rr[0].T).To(gomega.BeNumerically(">=", end), "re-resolution before the pass ended")
				}
				after := trace.Select(rr, func(e trace.Event) bool { return e.T >= end })
				g.Expect(after).NotTo(gomega.BeEmpty(), "no re-resolution after the pass ended (%s); the channel's requests:%s", trace.FormatT(end), spec.Render(rr))
				if next, ok := spec.NextAttempt(tr.Events, end+slack, addrs(tr, "b1/ipv6", "b1/ipv4")...); ok {
					g.Expect(after[0].T).To(gomega.BeNumerically("<", next.T),
						"the pass ended at %s and the client tried again (%s) before asking for re-resolution (%s)", trace.FormatT(end), next, trace.FormatT(after[0].T))
				}
				spec.RequireSteadyMachine(tr, end, after[0].T, "re-resolution at the end of the pass")
				g.Expect(after[0].T-end).To(gomega.BeNumerically("<=", slack),
					"re-resolution should come when the pass ends (%s, within %v); the channel's requests:%s", trace.FormatT(end), slack, spec.Render(rr))
			}},
			{Requirement: "A61-HE-PASS-END-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(tr).To(match.StayInTransientFailureUntilReady())
				g.Expect(firstState(tr, "READY")).NotTo(gomega.BeNil(), "never READY after the faults were cleared")
			}},
			{Requirement: "A61-HE-AFTER-PASS-ALL-ADDRESSES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				end := passEnd(g, tr, "b1/ipv6", "b1/ipv4")
				cleared := spec.Of(tr, trace.KindFaultClear)
				g.Expect(cleared).NotTo(gomega.BeEmpty())
				for _, a := range addrs(tr, "b1/ipv6", "b1/ipv4") {
					// The second round, faults still on: each address is
					// retried, whatever its place in the list.
					retries := trace.Select(spec.Of(tr, trace.KindSYN), func(e trace.Event) bool {
						return e.Addr == a && !e.Retransmit && e.T > end && e.T < cleared[0].T
					})
					g.Expect(retries).To(gomega.HaveLen(1), "retries of %s after the pass, before the faults were cleared", a)
				}
			}},
			// A subchannel's IDLE (its backoff over) and the policy's
			// connection request are the policy's to see: from outside,
			// only the reconnection, whose time the backoff's jitter sets.
			{Requirement: "A61-HE-AFTER-PASS-IDLE-CONNECTS", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				end := passEnd(g, tr, "b1/ipv6", "b1/ipv4")
				idles := trace.Select(spec.Of(tr, trace.KindSubchannelState), func(e trace.Event) bool { return e.T > end && e.State == "IDLE" })
				for _, idle := range idles {
					var connect *trace.Event
					for _, e := range spec.Of(tr, trace.KindSubchannelConnect) {
						if e.Subchannel == idle.Subchannel && e.T >= idle.T {
							connect = &e
							break
						}
					}
					g.Expect(connect).NotTo(gomega.BeNil(), "%s reported IDLE and was never asked to connect", idle.Subchannel)
					spec.RequireSteadyMachine(tr, idle.T, connect.T, "connection asked of the IDLE subchannel")
					g.Expect(connect.T-idle.T).To(gomega.BeNumerically("<=", spec.Within(tr, 10*time.Millisecond)),
						"%s should be asked to connect as soon as it reports IDLE", idle.Subchannel)
				}
				// Each IDLE seen was asked to connect: the rule held as
				// often as the run exercised it, which is a verdict only
				// if that was as often as the scenario arranges.
				verdict.Require(len(idles) >= 3, "%d subchannel(s) reported IDLE after the pass; the scenario arranges 3 (a backoff ends twice for the subchannel that wins, at least once for the other): the rule was not exercised as the check needs", len(idles))
			}},
			{Requirement: "A61-HE-AFTER-PASS-RERESOLVE-COUNT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// After the pass: one re-resolution per two failures (two
				// subchannels), counted across subchannels.
				if !spec.HasPolicy(tr) {
					spec.ReResolvesPerRound(g, tr, passEnd(g, tr, "b1/ipv6", "b1/ipv4"), 2, 1, addrs(tr, "b1/ipv6", "b1/ipv4")...)
					return
				}
				rr := spec.ReResolutions(tr)
				g.Expect(rr).To(gomega.HaveLen(2), "re-resolutions: at the end of the pass, and after the second round's two failures:%s", spec.Render(rr))
				tfs := trace.Select(spec.Of(tr, trace.KindSubchannelState), func(e trace.Event) bool {
					return e.State == "TRANSIENT_FAILURE" && e.T > rr[0].T && e.T <= rr[1].T
				})
				g.Expect(tfs).To(gomega.HaveLen(2), "failures between the two re-resolutions")
				spec.RequireSteadyMachine(tr, tfs[1].T, rr[1].T, "re-resolution after the round's failures")
				g.Expect(rr[1].T - tfs[1].T).To(gomega.BeNumerically("<=", spec.Within(tr, 10*time.Millisecond)))
			}},
			monitor.HENoTFDuringPass.Check(),
			monitor.HEPassEndReResolve.Check(),
			monitor.HEReResolvePerRound.Check(),
		},
		Agreement: firstPassSYNs(500 * time.Millisecond),
	}
}

// heTurnTFSkips: the new list's pass finds b1 in backoff after a failure
// and moves on to b2 at once.
func heTurnTFSkips() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-turn-tf-skips").
			Describe("b1 refuses; the client gets [b1], then at 300 ms (b1 in backoff) [b1, b2]").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(300*time.Millisecond, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
			At(310*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-TURN-TF-SKIPS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				up := nthUpdate(tr, 2)
				b1, b2 := spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4")
				g.Expect(attemptsTo(tr, b1, up)).To(gomega.BeEmpty(), "b1 is in backoff: no attempt")
				at := attemptsTo(tr, b2, up)
				g.Expect(at).NotTo(gomega.BeEmpty(), "b2 never attempted")
				spec.RequireSteadyMachine(tr, up, at[0], "attempt to b2 after the update")
				g.Expect(at[0]-up).To(gomega.BeNumerically("<", 100*time.Millisecond),
					"b2 should be attempted at once, not a Connection Attempt Delay after b1")
				res := spec.Of(tr, trace.KindRPCResult)
				g.Expect(res).To(gomega.HaveLen(1))
				g.Expect(res[0].Backend).To(gomega.Equal("b2"))
			}},
		},
		Agreement: synAgreement,
	}
}

// heTurnIdle: the shape that stalled implementations. The new list's pass
// starts while b1 is in backoff (TRANSIENT_FAILURE), and b1's backoff ends
// (IDLE) before the pass reaches it, three delays later: reaching it, the
// pass must request a connection, and b1, healthy again, wins.
func heTurnIdle() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-turn-idle").
			Describe("b1 refuses; the client gets [b1]; at 700 ms (b1 in backoff until 0.8-1.2 s) b1 is healed and the client gets [b2, b3, b4, b1], whose others drop SYNs").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
			Backend("b3", scenario.IPv4Only).Backend("b4", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Drop)).
			At(0, scenario.Fault("b3/ipv4", scenario.Drop)).
			At(0, scenario.Fault("b4/ipv4", scenario.Drop)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			At(700*time.Millisecond, scenario.Clear("b1/ipv4")).
			At(700*time.Millisecond, scenario.Resolve(scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4"), scenario.EP("b4/ipv4"), scenario.EP("b1/ipv4"))).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-TURN-IDLE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				up := nthUpdate(tr, 2)
				want := addrs(tr, "b2/ipv4", "b3/ipv4", "b4/ipv4", "b1/ipv4")
				absentUnlessAttempted(tr, want[1], up, "no Connection Attempt Delay moved the new list's pass on from its hung first attempt")
				if !spec.HasPolicy(tr) {
					b1IdleAtItsTurn(tr, want[3], up)
				}
				g.Expect(order(attempts(tr, up))).To(gomega.Equal(want))
				// The shape: b1 was in TRANSIENT_FAILURE when the pass
				// started and IDLE before the pass reached it.
				at := attemptsTo(tr, want[3], up)
				if len(at) == 0 {
					verdict.NoSign("the pass reached b1 (IDLE) and requested no connection")
				}
				spec.RequireSteadyMachine(tr, up, at[0], "three Connection Attempt Delays from the new list")
				g.Expect(at[0]-up).To(gomega.BeNumerically("~", 750*time.Millisecond, spec.Within(tr, labSlack)),
					"b1 is the fourth address: attempted three delays after the list arrived")
				if !spec.HasPolicy(tr) {
					return // b1IdleAtItsTurn established its states from outside
				}
				b1 := spec.SubchannelEvents(tr, want[3], trace.KindSubchannelState)
				var atStart, idle string
				var idleAt time.Duration
				for _, e := range b1 {
					if e.T <= up {
						atStart = e.State
					} else if idle == "" && e.State == "IDLE" {
						idle, idleAt = e.State, e.T
					}
				}
				g.Expect(atStart).To(gomega.Equal("TRANSIENT_FAILURE"), "b1's state when the pass started")
				g.Expect(idle).To(gomega.Equal("IDLE"), "b1 never left backoff")
				g.Expect(idleAt).To(gomega.BeNumerically("<", at[0]))
			}},
			// Releasing the other subchannels is the policy's act; their
			// attempts hang (dropped SYNs), and the run ends with r1's
			// answer, before the kernel would have retransmitted them.
			{Requirement: "A61-HE-READY-DROPS-OTHERS", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				var ready time.Duration
				for _, e := range spec.SubchannelEvents(tr, b1, trace.KindSubchannelState) {
					if e.State == "READY" {
						ready = e.T
					}
				}
				verdict.Require(ready != 0, "b1 never READY: no subchannel was chosen, so none had others to release")
				for _, other := range addrs(tr, "b2/ipv4", "b3/ipv4", "b4/ipv4") {
					sd := spec.SubchannelEvents(tr, other, trace.KindSubchannelShutdown)
					g.Expect(sd).NotTo(gomega.BeEmpty(), "%s's attempt is still in flight", other)
					spec.RequireSteadyMachine(tr, ready, sd[0].T, "shutdown of the other attempt once one is READY")
					g.Expect(sd[0].T-ready).To(gomega.And(gomega.BeNumerically(">=", 0),
						gomega.BeNumerically("<=", spec.Within(tr, 10*time.Millisecond))),
						"%s should be released when b1 is chosen", other)
				}
			}},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// heNewList: a new list arrives while the old list's attempts are still in
// flight; its pass starts over from its head, counting the kept subchannels
// that are CONNECTING as attempts it made (with their timers), and reaches
// the new address only after two delays.
func heNewList() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-new-list").
			Describe("b1 and b2 drop SYNs; the client gets [b1, b2], then at 400 ms [b2, b1, b3]").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
			At(0, scenario.Fault("b2/ipv4", scenario.Drop)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			At(400*time.Millisecond, scenario.Resolve(scenario.EP("b2/ipv4"), scenario.EP("b1/ipv4"), scenario.EP("b3/ipv4"))).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-NEW-LIST-NEW-PASS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				up := nthUpdate(tr, 2)
				absentUnlessAttempted(tr, spec.Addr(tr, "b3/ipv4"), up, "the new list's pass never reached b3, its only new address")
				at := attemptsTo(tr, spec.Addr(tr, "b3/ipv4"), up)
				spec.RequireSteadyMachine(tr, up, at[0], "two Connection Attempt Delays from the new list")
				g.Expect(at[0]-up).To(gomega.BeNumerically("~", 500*time.Millisecond, spec.Within(tr, labSlack)),
					"the new pass walks b2 and b1 first, a Connection Attempt Delay each")
				res := spec.Of(tr, trace.KindRPCResult)
				g.Expect(res).To(gomega.HaveLen(1))
				g.Expect(res[0].Backend).To(gomega.Equal("b3"))
			}},
			{Requirement: "A61-HE-TURN-CONNECTING", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				up := nthUpdate(tr, 2)
				for _, a := range addrs(tr, "b1/ipv4", "b2/ipv4") {
					verdict.Require(slices.ContainsFunc(spec.AttemptsTo(tr.Events, a), func(e trace.Event) bool { return e.T < up }),
						"%s was not attempted before the new list (a pass that ran late, or no Connection Attempt Delay to move it on from b1): it was not CONNECTING at its turn", a)
					g.Expect(attemptsTo(tr, a, up)).To(gomega.BeEmpty(), "%s is CONNECTING: no new attempt", a)
					// The policy's requests, where the trace has them (a
					// request to a CONNECTING subchannel makes no SYN).
					connects := trace.Select(spec.SubchannelEvents(tr, a, trace.KindSubchannelConnect), func(e trace.Event) bool { return e.T >= up })
					g.Expect(connects).To(gomega.BeEmpty(), "%s is CONNECTING: no new connection request", a)
				}
			}},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// The first backoff of spec/related/connection-backoff.md: 1 s ± 20 %.
const (
	minFirstBackoff = 800 * time.Millisecond
	maxFirstBackoff = 1200 * time.Millisecond
)

// passEnd is when the first pass over the given addresses ended: the first
// failure of the last of them to fail.
func passEnd(g gomega.Gomega, tr *trace.Trace, as ...scenario.Addr) time.Duration {
	var end time.Duration
	for _, a := range as {
		t := firstFailure(tr, spec.Addr(tr, a))
		g.ExpectWithOffset(1, t).NotTo(gomega.BeNumerically("<", 0), "%s never failed", a)
		end = max(end, t)
	}
	return end
}

// firstFailure is when a connection attempt to addr first failed, or -1:
// a subchannel of addr first reported TRANSIENT_FAILURE or, in a trace
// without the policy's events, the capture saw the attempt refused.
func firstFailure(tr *trace.Trace, addr string) time.Duration {
	if fs := spec.ConnectionFailures(tr, addr); len(fs) > 0 {
		return fs[0]
	}
	return -1
}

// firstState is the root policy's first report of state st, or nil.
func firstState(tr *trace.Trace, st string) *trace.Event {
	for _, e := range spec.ChannelStates(tr) {
		if e.State == st {
			return &e
		}
	}
	return nil
}

// b1IdleAtItsTurn states, from outside, the preconditions of he-turn-idle's
// check (A61-HE-TURN-IDLE: what the pass does with a subchannel that is
// IDLE at its turn): b1's attempt was refused less than the shortest first
// backoff before the list arrived at up (so b1 was in backoff, TRANSIENT_FAILURE,
// when the pass started), and b1 made no attempt of its own before the pass
// reached it, three Connection Attempt Delays after up, with the longest
// first backoff over by then (so it was IDLE at its turn). A subchannel may
// reconnect on its own when its backoff ends (A61 leaves that to the
// subchannel): then it was CONNECTING, not IDLE, at its turn, and the run
// says nothing of the rule.
func b1IdleAtItsTurn(tr *trace.Trace, b1 string, up time.Duration) {
	refused := time.Duration(-1)
	for _, t := range spec.Refusals(tr, b1) {
		if t < up {
			refused = t
		}
	}
	verdict.Require(refused >= 0, "b1 was never refused before the list arrived: it was not in backoff when the pass started")
	verdict.Require(up-refused < minFirstBackoff, "b1 was refused %v before the list arrived, more than the shortest first backoff (%v): it may have left backoff before the pass started", up-refused, minFirstBackoff)
	turn := up + 3*250*time.Millisecond
	verdict.Require(refused+maxFirstBackoff < turn, "the longest first backoff after b1's refusal ends after its turn: it may still have been in backoff")
	for _, t := range attemptsTo(tr, b1, refused) {
		verdict.Require(t >= turn-labSlack, "b1 connected on its own at %v, when its backoff ended, before the pass reached it at about %v: it was not IDLE at its turn", t, turn)
	}
}
