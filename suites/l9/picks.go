package l9

import (
	"slices"
	"sort"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// stateAt is the channel's state just before t: the last of
// spec.ChannelStates before it ("" if none).
func stateAt(tr *trace.Trace, t time.Duration) string {
	st := ""
	for _, e := range spec.ChannelStates(tr) {
		if e.T < t {
			st = e.State
		}
	}
	return st
}

// firstSYNACKAfter is the first SYN-ACK from addr at from or later.
func firstSYNACKAfter(tr *trace.Trace, addr string, from time.Duration) (time.Duration, bool) {
	for _, e := range tr.Events {
		if e.Kind == trace.KindSYNACK && e.Addr == addr && e.T >= from {
			return e.T, true
		}
	}
	return 0, false
}

// queueUntilPicker: b1's SYNs are dropped, so pick_first stays CONNECTING;
// r1 (not wait-for-ready) is sent then; at 300 ms the fault clears, the
// retransmitted SYN (about 1 s after the first) connects, and r1, queued
// until the READY picker, is answered (L9, Balancer API: a pick that finds
// nothing available while progress is made waits for the next picker).
func queueUntilPicker() spec.Spec {
	s := scenario.New("pick-queues-until-picker").
		Describe("pick_first on [b1], b1's SYNs dropped until 300 ms; r1 (no wait-for-ready, 5 s deadline) at 100 ms").
		Backend("b1", scenario.IPv4Only).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(100*time.Millisecond, scenario.RPC("r1", scenario.Deadline(5*time.Second))).
		At(300*time.Millisecond, scenario.Clear("b1/ipv4")).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(4 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.L9, Section: sectionBalancerAPI,
		Scenario: s,
		Checks: []spec.Check{{Requirement: "L9-PICK-QUEUE-UNTIL-PICKER", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			start := spec.RPCStart(g, tr, "r1")
			verdict.Require(stateAt(tr, start) == "CONNECTING", "the channel was %q, not CONNECTING, when r1 was sent: its pick did not meet a policy making progress", stateAt(tr, start))
			up, ok := firstSYNACKAfter(tr, spec.Addr(tr, "b1/ipv4"), start)
			verdict.Require(ok, "b1 never accepted a connection after r1 was sent: there was no READY picker to wait for")
			r1 := spec.RPCResult(g, tr, "r1")
			g.Expect(r1.Code).To(gomega.Equal("OK"), "r1, not wait-for-ready, waits for the READY picker instead of failing (%s)", r1.Err)
			g.Expect(r1.T).To(gomega.BeNumerically(">=", up), "r1 is answered once b1 is connected")
		}}},
		Agreement: resultsAgreement(),
	}
}

// failFastInTF: b1 refuses, so pick_first reports TRANSIENT_FAILURE; 100 ms
// later r1 (not wait-for-ready) fails at once with UNAVAILABLE,
// r2 (wait-for-ready) waits, and is answered once pick_first reconnects
// after its backoff once the refusals stop, 300 ms after TRANSIENT_FAILURE
// (L9, Balancer API: other pick errors fail a fail-fast RPC, and make a
// wait-for-ready one wait for the next picker). The steps follow the
// channel's TRANSIENT_FAILURE (a driver's channel-state stands for the
// root policy's balancer-state), so a slow client start moves them too.
func failFastInTF() spec.Spec {
	inTF := scenario.On("balancer-state").WithState("TRANSIENT_FAILURE")
	s := scenario.New("pick-fails-fast-in-tf").
		Describe("pick_first on [b1], b1 refusing until 300 ms after TRANSIENT_FAILURE; r1 (no wait-for-ready) and r2 (wait-for-ready), 5 s deadlines, 100 ms after it").
		Backend("b1", scenario.IPv4Only).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		AfterDelay(inTF, 100*time.Millisecond, scenario.RPC("r1", scenario.Deadline(5*time.Second))).
		AfterDelay(inTF, 100*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		AfterDelay(inTF, 300*time.Millisecond, scenario.Clear("b1/ipv4")).
		After(scenario.On("rpc-result").WithRPC("r2"), scenario.Finish()).
		End(4 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.L9, Section: sectionBalancerAPI,
		Scenario: s,
		Checks: []spec.Check{{Requirement: "L9-PICK-FAILFAST-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			start := spec.RPCStart(g, tr, "r1")
			verdict.Require(stateAt(tr, start) == "TRANSIENT_FAILURE", "the channel was %q, not TRANSIENT_FAILURE, when r1 and r2 were sent", stateAt(tr, start))
			r1, r2 := spec.RPCResult(g, tr, "r1"), spec.RPCResult(g, tr, "r2")
			g.Expect(r1.Code).To(gomega.Equal("UNAVAILABLE"), "r1, fail-fast, fails with UNAVAILABLE while the channel is in TRANSIENT_FAILURE")
			up, ok := firstSYNACKAfter(tr, spec.Addr(tr, "b1/ipv4"), start)
			verdict.Require(ok, "b1 never accepted a connection after r2 was sent: there was no READY picker for r2 to wait for")
			g.Expect(r1.T).To(gomega.BeNumerically("<", up), "r1 fails at once, not after waiting for the next picker")
			g.Expect(r2.Code).To(gomega.Equal("OK"), "r2, wait-for-ready, waits for the READY picker (%s)", r2.Err)
			g.Expect(r2.T).To(gomega.BeNumerically(">=", up), "r2 is answered once b1 is connected")
		}}},
		Agreement: backoffResultsAgreement(),
	}
}

// fullList: round_robin on [b1, b2, b3]; then [b2, b3]; then [b3]. Each
// update is the whole list (L9, The resolver API), so after the second
// only b2 and b3 serve, after the third only b3; a client that read them
// as deltas (additions) would keep all three.
func fullList() spec.Spec {
	b := backends(scenario.New("resolver-full-list").
		Describe("round_robin; [b1, b2, b3] at 0, six RPCs at 100 ms; [b2, b3] at 300 ms, six RPCs at 400 ms; [b3] at 600 ms, six RPCs at 700 ms")).
		LB("round_robin", `{}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4")))
	spec.SendRPCs(b, 100*time.Millisecond, rpcIDs("f", 6))
	b.At(300*time.Millisecond, scenario.Resolve(scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4")))
	spec.SendRPCs(b, 400*time.Millisecond, rpcIDs("g", 6))
	b.At(600*time.Millisecond, scenario.Resolve(scenario.EP("b3/ipv4")))
	spec.SendRPCs(b, 700*time.Millisecond, rpcIDs("h", 6))
	s := b.After(scenario.On("rpc-result").Times(18), scenario.Finish()).End(2 * time.Second).MustBuild()
	return spec.Spec{
		Doc: requirement.L9, Section: sectionResolverAPI,
		Scenario: s,
		Checks: []spec.Check{{Requirement: "L9-RESOLVER-FULL-LIST", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			first := answeredBy(g, tr, rpcIDs("f", 6))
			verdict.Require(slices.Equal(first, []string{"b1", "b2", "b3"}), "the first RPCs were answered by %v, not spread over the three backends: the policy did not act as round_robin", first)
			g.Expect(answeredBy(g, tr, rpcIDs("g", 6))).To(gomega.Equal([]string{"b2", "b3"}), "after [b2, b3], b1 is no longer used")
			g.Expect(answeredBy(g, tr, rpcIDs("h", 6))).To(gomega.Equal([]string{"b3"}), "after [b3], only b3 is used")
		}}},
		Agreement: resultsAgreement(),
	}
}

// answeredBy are the backends that answered ids (sorted); the check fails
// if one was not answered.
func answeredBy(g gomega.Gomega, tr *trace.Trace, ids []string) []string {
	var out []string
	for _, b := range spec.ServedByEach(g, tr, ids...) {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return out
}

// defaultPickFirst: a service config without an LB policy; [b1, b2, b3];
// every RPC goes to one backend (L9, Initialization: with no policy given,
// pick_first).
func defaultPickFirst() spec.Spec {
	b := backends(scenario.New("default-pick-first").
		Describe("no LB policy in the service config; [b1, b2, b3]; six RPCs at 100 ms")).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4")))
	spec.SendRPCs(b, 100*time.Millisecond, rpcIDs("r", 6))
	s := b.After(scenario.On("rpc-result").Times(6), scenario.Finish()).End(2 * time.Second).MustBuild()
	return spec.Spec{
		Doc: requirement.L9, Section: sectionInitialization,
		Scenario: s,
		Checks: []spec.Check{{Requirement: "L9-DEFAULT-PICK-FIRST", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			g.Expect(answeredBy(g, tr, rpcIDs("r", 6))).To(gomega.HaveLen(1), "pick_first, the default, sends every RPC to one backend")
		}}},
		Agreement: resultsAgreement(),
	}
}
