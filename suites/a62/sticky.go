package a62

import (
	"fmt"
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

// minFirstBackoff is the shortest first backoff of
// spec/related/connection-backoff.md (1 s - 20 %), which the checks lean on.
const minFirstBackoff = 800 * time.Millisecond

// backoffAgreement is the tolerance between the simulator and the lab for
// times that follow a subchannel's backoff: the simulator draws its ±20 %
// jitter from the run's seed, grpc-go's subchannels in the lab from their
// own source, so one reconnection may come up to 400 ms earlier or later
// (1 s ± 200 ms on each side).
const backoffAgreement = 400*time.Millisecond + labSlack

// tfPicksFailFast: b1 refuses; once pick_first is in TRANSIENT_FAILURE an
// RPC without wait_for_ready fails at once, one with it waits; a second
// plain RPC after a failed reconnection fails too; the refusal ends at
// 1.5 s and the waiting RPC succeeds at the next reconnection.
func tfPicksFailFast() spec.Spec {
	onTF := scenario.On("balancer-state").WithState(tf)
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyTF,
		Scenario: scenario.New("tf-picks-fail-fast").
			Describe("b1 refuses until 1.5 s; in TRANSIENT_FAILURE: r1 plain, r2 wait_for_ready, r3 plain at 1.4 s").
			Backend("b1", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			After(onTF, scenario.RPC("r1")).
			After(onTF, scenario.RPC("r2", scenario.WaitForReady())).
			At(1400*time.Millisecond, scenario.RPC("r3")).
			At(1500*time.Millisecond, scenario.Clear("b1/ipv4")).
			FinishAfterEveryRPC().
			End(6 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A62-TF-PICKS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, id := range []string{"r1", "r3"} {
					start, r := spec.RPCStart(g, tr, id), spec.RPCResult(g, tr, id)
					g.Expect(r.Code).To(gomega.Equal("UNAVAILABLE"), "%s, sent in TRANSIENT_FAILURE without wait_for_ready, should fail", id)
					g.Expect(r.Err).NotTo(gomega.BeEmpty(), "%s should fail with the connection error", id)
					spec.RequireSteadyMachine(tr, start, r.T, "fail-fast of an RPC sent in TRANSIENT_FAILURE")
					g.Expect(r.T-start).To(gomega.BeNumerically("<=", spec.Within(tr, labSlack)),
						"%s should fail at once, not wait for a connection", id)
				}
			}},
			{Requirement: "A62-TF-PICKS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				clear := mustFirst(g, tr, 0, "fault-clear", trace.OfKind(trace.KindFaultClear))
				rdy := mustFirst(g, tr, 0, "READY channel state", spec.StateIs(tr, ready))
				r := spec.RPCResult(g, tr, "r2")
				g.Expect(r.Code).To(gomega.Equal("OK"), "r2 (wait_for_ready) should wait out TRANSIENT_FAILURE: %s", r.Err)
				g.Expect(r.Backend).To(gomega.Equal("b1"))
				if r.T < rdy.T && tr.Header.Env["driver.observes"] == "polling" {
					// A driver that polls the channel's state reports READY
					// when it next looks (grpcio's is 0.2–2 ms late).
					verdict.Require(false, "r2 was answered at %s, before the READY report at %s, from a driver that polls the channel's state: its report may lag the channel",
						trace.FormatT(r.T), trace.FormatT(rdy.T))
				}
				if r.T < rdy.T && !spec.HasPolicy(tr) {
					// A driver that watches the channel reports READY when
					// its watcher wakes, after the change, while the RPC
					// goes on at once (grpc-go v1.82.1 through the Go
					// driver: r2's result 0.13 ms before the READY report).
					// Within a reaction's slack, the report may lag the
					// channel; further, the RPC beat READY.
					slack := spec.ReactionWithin(tr, 10*time.Millisecond)
					verdict.Require(rdy.T-r.T > slack, "r2 was answered at %s, %v before the READY report at %s, within the slack of the driver's report (%v): the report may lag the channel",
						trace.FormatT(r.T), rdy.T-r.T, trace.FormatT(rdy.T), slack)
				}
				g.Expect(r.T).To(gomega.BeNumerically(">=", rdy.T), "r2 should be answered only once READY")
				g.Expect(rdy.T).To(gomega.BeNumerically(">", clear.T))
			}},
			monitor.TFPicks.Check(),
			monitor.StickyTF.Check(),
		},
		// Up to the refusal's end the run is one failed pass and one failed
		// reconnection per mode; after it, READY waits for the second
		// backoff, whose jitter the two modes draw differently.
		Agreement: agreement(backoffAgreement, 1500*time.Millisecond),
	}
}

// stickyTFPriority: priority's p0 is a pick_first whose only address
// refuses, p1 a pick_first on a healthy b2. p0 stays in TRANSIENT_FAILURE
// while it reconnects, so an RPC at 1.4 s goes to b2; once b1 is back, p0
// becomes READY and takes the picks again.
func stickyTFPriority() spec.Spec {
	const p0 = "p0"
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyTF,
		Scenario: scenario.New("sticky-tf-priority").
			Describe("priority [p0: pick_first on b1, p1: pick_first on b2]; b1 refuses until 1.5 s; RPCs at 1.4 s and after p0 is READY").
			Backend("b1", scenario.IPv4Only).
			Backend("b2", scenario.IPv4Only).
			LB("priority_experimental", `{"children":{`+
				`"p0":{"config":[{"pick_first":{}}]},`+
				`"p1":{"config":[{"pick_first":{}}]}},`+
				`"priorities":["p0","p1"]}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(
				scenario.EP("b1/ipv4").With("path", p0),
				scenario.EP("b2/ipv4").With("path", "p1"))).
			At(1400*time.Millisecond, scenario.RPC("r1")).
			At(1500*time.Millisecond, scenario.Clear("b1/ipv4")).
			AfterDelay(scenario.On("syn-ack").WithAddr("b1/ipv4"), 100*time.Millisecond, scenario.RPC("r2")).
			FinishAfterEveryRPC().
			End(6 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A62-STICKY-TF-PRIORITY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// The children's own states are not in the trace (it records
				// the root); what the channel sees is that p0's reconnections
				// never take the picks back from p1: a pick_first that went
				// IDLE or CONNECTING after its backoff would be chosen again
				// by priority, and the channel would leave READY.
				spec.ExpectStateSequence(g, tr, []string{connecting, ready}, "p0 reconnecting in TRANSIENT_FAILURE should not disturb the READY channel")
			}},
			{Requirement: "A62-STICKY-TF-PRIORITY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				r1 := spec.RPCStart(g, tr, "r1")
				g.Expect(len(spec.AttemptsTo(trace.Window(tr.Events, 0, r1), b1))).To(gomega.BeNumerically(">=", 2),
					"p0 should have reconnected to b1 (and failed) before r1")
				r := spec.RPCResult(g, tr, "r1")
				g.Expect(r.Code).To(gomega.Equal("OK"), r.Err)
				g.Expect(r.Backend).To(gomega.Equal("b2"), "with p0 in TRANSIENT_FAILURE, r1 should go to p1")
			}},
			{Requirement: "A62-STICKY-TF-PRIORITY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// r2 is sent once p0 has reconnected to b1 (its SYN-ACK).
				clear := mustFirst(g, tr, 0, "fault-clear", trace.OfKind(trace.KindFaultClear))
				mustFirst(g, tr, clear.T, "SYN-ACK from b1 after it recovered: p0's pick_first, in TRANSIENT_FAILURE, should keep reconnecting",
					trace.OfKind(trace.KindSYNACK), func(e trace.Event) bool { return e.Addr == spec.Addr(tr, "b1/ipv4") })
				r := spec.RPCResult(g, tr, "r2")
				g.Expect(r.Code).To(gomega.Equal("OK"), r.Err)
				g.Expect(r.Backend).To(gomega.Equal("b1"), "once p0 is READY, r2 should go to p0")
			}},
		},
		Agreement: agreement(backoffAgreement, 1500*time.Millisecond),
	}
}

// stickyTFUntilReady: b1 and b2 refuse; pick_first reports TRANSIENT_FAILURE
// and keeps reconnecting both, with backoff and no RPC; b2 stops refusing
// at 1.5 s and the next reconnection to it ends the TRANSIENT_FAILURE.
func stickyTFUntilReady() spec.Spec {
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyDflt,
		Scenario: scenario.New("sticky-tf-until-ready").
			Describe("b1 and b2 refuse; b2 recovers at 1.5 s; no RPCs").
			Backend("b1", scenario.IPv4Only).
			Backend("b2", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
			At(1500*time.Millisecond, scenario.Clear("b2/ipv4")).
			After(scenario.On("balancer-state").WithState(ready), scenario.Finish()).
			End(6 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			monitor.StickyTF.Check(),
			{Requirement: "A62-STICKY-TF-RECONNECTS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(trace.Select(tr.Events, trace.OfKind(trace.KindRPCStart))).To(gomega.BeEmpty())
				inTF := mustFirst(g, tr, 0, "TRANSIENT_FAILURE channel state", spec.StateIs(tr, tf))
				clear := mustFirst(g, tr, 0, "fault-clear", trace.OfKind(trace.KindFaultClear))
				for _, a := range []scenario.Addr{"b1/ipv4", "b2/ipv4"} {
					syns := spec.AttemptsTo(tr.Events, spec.Addr(tr, a))
					g.Expect(len(spec.AttemptsTo(trace.Window(tr.Events, inTF.T, clear.T), spec.Addr(tr, a)))).
						To(gomega.BeNumerically(">=", 1), "%s should be reconnected in TRANSIENT_FAILURE, without RPCs", a)
					// Judged from below only: steady where a stall could
					// make the wait look short, or a short one look long.
					least := minFirstBackoff - spec.TimerWithin(tr)
					for i := 1; i < len(syns); i++ {
						spec.RequireSteadyForLeast(tr, syns[i-1].T, syns[i].T, least, fmt.Sprintf("backoff between attempts %d and %d to %s", i, i+1, a))
						g.Expect(syns[i].T-syns[i-1].T).To(gomega.BeNumerically(">=", least),
							"reconnections to %s should wait out the backoff", a)
					}
				}
			}},
			monitor.StickyTFBackoff.Check(),
			{Requirement: "A62-STICKY-TF-ENDS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.ExpectStateSequence(g, tr, []string{connecting, tf, ready})
				clear := mustFirst(g, tr, 0, "fault-clear", trace.OfKind(trace.KindFaultClear))
				rdy := mustFirst(g, tr, 0, "READY channel state", spec.StateIs(tr, ready))
				g.Expect(rdy.T).To(gomega.BeNumerically(">", clear.T))
				b2 := spec.Addr(tr, "b2/ipv4")
				g.Expect(spec.AttemptsTo(trace.Window(tr.Events, clear.T, rdy.T), b2)).To(gomega.HaveLen(1),
					"the first reconnection to b2 after it recovered should end TRANSIENT_FAILURE")
			}},
		},
		Agreement: agreement(backoffAgreement, 1500*time.Millisecond),
	}
}

// stickyTFReresolveEveryRound: b1 and b2 refuse for the whole run; each
// time both have failed once more, pick_first asks for re-resolution and
// reports TRANSIENT_FAILURE again: after every round, not only the first.
//
// Re-resolution per round is A61's rule (Happy Eyeballs in the pick_first
// LB Policy); here it is how A62's reconnecting in sticky
// TRANSIENT_FAILURE goes on, round after round.
func stickyTFReresolveEveryRound() spec.Spec {
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyDflt,
		Scenario: scenario.New("sticky-tf-reresolve-every-round").
			Describe("b1 and b2 refuse for 3.6 s: three rounds of failures").
			Backend("b1", scenario.IPv4Only).
			Backend("b2", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
			End(3600 * time.Millisecond).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A62-STICKY-TF-RECONNECTS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				if !spec.HasPolicy(tr) {
					spec.ReResolvesPerRound(g, tr, -1, 2, 3, spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4"))
					return
				}
				// Walk the trace: count subchannel failures; every second
				// one completes a round and must be followed by
				// re-resolution before the next failure.
				failures, rounds, asked := 0, 0, 0
				for _, e := range tr.Events {
					switch {
					case e.Kind == trace.KindSubchannelState && e.State == tf:
						g.Expect(asked).To(gomega.Equal(rounds),
							"at %s: round %d of failures ended without re-resolution", trace.FormatT(e.T), rounds)
						failures++
						if failures%2 == 0 {
							rounds++
						}
					case e.Kind == trace.KindResolveNow && e.Source == trace.SourcePolicy:
						asked++
						g.Expect(asked).To(gomega.BeNumerically("<=", rounds),
							"at %s: re-resolution before a round of failures ended", trace.FormatT(e.T))
					}
				}
				g.Expect(asked).To(gomega.Equal(rounds), "every round of failures should end with re-resolution")
				// How many rounds of backoff fit in the run is the machine's
				// pace, not this rule's (A62-STICKY-TF-RECONNECTS judges
				// the reconnecting).
				verdict.Require(rounds >= 3, "the run gave %d rounds of failures, and the check judges three", rounds)
			}},
			{Requirement: "A62-STICKY-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.Channel(tr)).To(match.StayInTransientFailureUntilReady())
				spec.ExpectStateSequence(g, tr, []string{connecting, tf})
			}},
		},
		Agreement: agreement(backoffAgreement, 1500*time.Millisecond),
	}
}

// stickyTFNewList: b1 and b2 refuse; in TRANSIENT_FAILURE, with both in
// backoff, the list becomes [b2, b3]. The new pass skips b2 (in backoff),
// connects to b3 at once and reports READY without going through
// CONNECTING.
func stickyTFNewList() spec.Spec {
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyDflt,
		Scenario: scenario.New("sticky-tf-new-list").
			Describe("b1 and b2 refuse; at 300 ms, in TRANSIENT_FAILURE with both in backoff, the list becomes [b2, b3]").
			Backend("b1", scenario.IPv4Only).
			Backend("b2", scenario.IPv4Only).
			Backend("b3", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
			At(300*time.Millisecond, scenario.Resolve(scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4"))).
			After(scenario.On("balancer-state").WithState(ready), scenario.Finish()).
			End(2 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A62-STICKY-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.Channel(tr)).To(match.StayInTransientFailureUntilReady())
				spec.ExpectStateSequence(g, tr, []string{connecting, tf, ready})
			}},
			{Requirement: "A62-STICKY-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				updates := trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate))
				g.Expect(updates).NotTo(gomega.BeEmpty())
				update := updates[len(updates)-1]
				rdy := mustFirst(g, tr, update.T, "READY channel state", spec.StateIs(tr, ready))
				pass := trace.Window(tr.Events, update.T, rdy.T+1)
				g.Expect(attemptAddrs(pass)).To(gomega.Equal([]string{spec.Addr(tr, "b3/ipv4")}),
					"the new pass should skip b2, in backoff, and connect to b3 alone")
				syn := spec.Attempts(pass)[0]
				spec.RequireSteadyMachine(tr, update.T, syn.T, "attempt to b3 after the update")
				g.Expect(syn.T-update.T).To(gomega.BeNumerically("<=", spec.Within(tr, labSlack)),
					"b3 should be tried at once, not after b2's backoff")
				g.Expect(update.T).To(gomega.BeNumerically("<", minFirstBackoff), "b2 should still be in backoff at the update")
			}},
		},
		Agreement: agreement(labSlack, 0),
	}
}

// stickyTFNewListAllFail: b1 and b2 refuse; in TRANSIENT_FAILURE, with both
// in backoff, the list becomes [b2, b3] and b3 refuses too. The whole new
// pass fails without a CONNECTING; it ends with re-resolution and
// TRANSIENT_FAILURE again; b3 recovers at 700 ms and its next
// reconnection ends the TRANSIENT_FAILURE.
func stickyTFNewListAllFail() spec.Spec {
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyDflt,
		Scenario: scenario.New("sticky-tf-new-list-all-fail").
			Describe("b1 and b2 refuse; at 300 ms, in TRANSIENT_FAILURE, the list becomes [b2, b3]; b3 refuses until 700 ms").
			Backend("b1", scenario.IPv4Only).
			Backend("b2", scenario.IPv4Only).
			Backend("b3", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b3/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
			At(300*time.Millisecond, scenario.Resolve(scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4"))).
			At(700*time.Millisecond, scenario.Clear("b3/ipv4")).
			After(scenario.On("balancer-state").WithState(ready), scenario.Finish()).
			End(3 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A62-STICKY-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.Channel(tr)).To(match.StayInTransientFailureUntilReady())
				spec.ExpectStateSequence(g, tr, []string{connecting, tf, ready})
			}},
			{Requirement: "A62-STICKY-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				updates := trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate))
				g.Expect(updates).NotTo(gomega.BeEmpty())
				update := updates[len(updates)-1]
				clear := mustFirst(g, tr, 0, "fault-clear", trace.OfKind(trace.KindFaultClear))
				pass := trace.Window(tr.Events, update.T, clear.T)
				b3 := spec.Addr(tr, "b3/ipv4")
				g.Expect(attemptAddrs(pass)).To(gomega.Equal([]string{b3}),
					"the new pass should skip b2, in backoff, and try b3 once")
				rr := trace.Select(pass, trace.OfKind(trace.KindResolveNow), trace.FromSource(trace.SourcePolicy))
				if !spec.HasPolicy(tr) {
					// The channel's requests may include b3's subchannel's
					// own: at least one, when the pass ends.
					rr = trace.Select(spec.ReResolutions(tr), func(e trace.Event) bool { return e.T >= update.T && e.T < clear.T })
					g.Expect(rr).NotTo(gomega.BeEmpty(), "the failed new pass should end with re-resolution")
					g.Expect(rr[len(rr)-1].T).To(gomega.BeNumerically(">=", spec.Attempts(pass)[0].T), "re-resolution at the end of the new pass, after b3 was tried")
				} else {
					g.Expect(rr).To(gomega.HaveLen(1), "the failed new pass should end with re-resolution")
				}
				if !spec.HasPolicy(tr) {
					// The channel reports changes of state only: the
					// policy's TRANSIENT_FAILURE again is seen as the
					// channel still in it when the pass is over.
					in := trace.Select(spec.Channel(tr), trace.OfKind(trace.KindChannelState), func(e trace.Event) bool { return e.T < clear.T })
					g.Expect(in).NotTo(gomega.BeEmpty())
					g.Expect(in[len(in)-1].State).To(gomega.Equal(tf), "the failed new pass should end in TRANSIENT_FAILURE again")
				} else {
					g.Expect(trace.Select(pass, spec.StateIs(tr, tf))).NotTo(gomega.BeEmpty(),
						"the failed new pass should end by reporting TRANSIENT_FAILURE again")
				}
			}},
			{Requirement: "A62-STICKY-TF-ENDS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				clear := mustFirst(g, tr, 0, "fault-clear", trace.OfKind(trace.KindFaultClear))
				rdy := mustFirst(g, tr, 0, "READY channel state", spec.StateIs(tr, ready))
				g.Expect(rdy.T).To(gomega.BeNumerically(">", clear.T))
				g.Expect(spec.AttemptsTo(trace.Window(tr.Events, clear.T, rdy.T+1), spec.Addr(tr, "b3/ipv4"))).To(gomega.HaveLen(1),
					"b3's first reconnection after it recovered should end TRANSIENT_FAILURE")
			}},
		},
		// Up to b3's recovery every step is one RTT; after it, b2's and
		// b3's reconnections race on their backoff jitter, which the two
		// modes draw differently.
		Agreement: agreement(labSlack, 700*time.Millisecond),
	}
}
