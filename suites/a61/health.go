package a61

import (
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// A61's health rules (Generic Health Reporting Mechanism; Reasons for
// Generic Health Reporting; the same text in both revisions), judged from
// outside on any client that does client-side health checking (gRFC A17,
// the mechanism the lab can drive: each backend address serves its own
// grpc.health.v1 status per service name, set by the scenario's health
// steps). The client turns it on through its service config's
// healthCheckConfig; a driver that cannot do it says so (hello's
// health_check) and these scenarios are not-applicable to it.
//
// What a client shows: its channel's states, which backend answered each
// RPC and over which connection, its connection attempts (the capture) and
// the connections it closed (the backends' conn-close). Which subchannels
// the policy holds and whose health it watches are the policy's own events
// (subchannel-health): the checks reading them need the reference.

// healthService is the health service name the health specs' clients
// check (A17, healthCheckConfig): the lab backends' own service.
const healthService = "conform.lab.Backend"

// healthChecked is a service config running policy with client-side health
// checking of healthService on.
func healthChecked(policy string) string {
	return fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}],"healthCheckConfig":{"serviceName":%q}}`, policy, healthService)
}

// Health steps on healthService.
func notServing(a scenario.Addr) scenario.SetHealth {
	return scenario.Health(a, scenario.NotServing).For(healthService)
}

func serving(a scenario.Addr) scenario.SetHealth {
	return scenario.Health(a, scenario.Serving).For(healthService)
}

// healthSetAt is when addr began serving the status a health watch reports
// as state (the health-set event: READY for SERVING, TRANSIENT_FAILURE for
// NOT_SERVING) for healthService.
func healthSetAt(g gomega.Gomega, tr *trace.Trace, addr, state string) time.Duration {
	for _, e := range spec.Of(tr, trace.KindHealthSet) {
		if e.Addr == addr && e.Service == healthService && e.State == state {
			return e.T
		}
	}
	g.ExpectWithOffset(1, false).To(gomega.BeTrue(), "no health step set %s on %s", state, addr)
	return 0
}

// heardAfter is how long after the backend sent a client a health change
// (health-sent) the health specs send the RPCs that change is to steer:
// far longer than a reaction at once (requireHeard), on a steady machine.
const heardAfter = 100 * time.Millisecond

// sentHealth is the condition "addr's health service sent the client, for
// the n-th time, the status a health watch reports as state": the steps a
// health change is to steer wait on it, not on the clock.
func sentHealth(a scenario.Addr, state string, n int) scenario.Cond {
	return scenario.On(string(trace.KindHealthSent)).WithAddr(a).WithState(state).Times(n)
}

// healthSentAt is when addr's health service sent the client, for the n-th
// time, the status a health watch reports as state (health-sent, for
// healthService). The check fails when it never did: the client did not
// watch the health of its connection to addr, or not for long.
func healthSentAt(g gomega.Gomega, tr *trace.Trace, addr, state string, n int) time.Duration {
	k := 0
	for _, e := range spec.Of(tr, trace.KindHealthSent) {
		if e.Addr == addr && e.Service == healthService && e.State == state {
			if k++; k == n {
				return e.T
			}
		}
	}
	g.ExpectWithOffset(1, false).To(gomega.BeTrue(), "%s's health service never sent the client %s for the %d time (no health watch on its connection?)", addr, state, n)
	return 0
}

// requireHeard states the precondition of a check on RPCs a health change
// is to steer: each was sent after the backend had sent the client the
// change at sent (health-sent), with the slack of a reaction at once
// (spec.ReactionWithin) between them on a steady machine
// (spec.RequireSteadyFor). Otherwise the client may not have heard of it
// yet, whatever it does with it.
func requireHeard(g gomega.Gomega, tr *trace.Trace, sent time.Duration, change string, ids ...string) {
	slack := spec.ReactionWithin(tr, 10*time.Millisecond)
	for _, id := range ids {
		start := spec.RPCStart(g, tr, id)
		verdict.Require(start-sent > slack, "%s was sent at %s, %v after the backend sent the client %s (%s): the client may not have heard of it yet",
			id, trace.FormatT(start), start-sent, change, trace.FormatT(sent))
		spec.RequireSteadyFor(tr, sent, start, slack, "client hearing of "+change+" before "+id)
	}
}

// stateAt is the channel's state at t: the last of spec.ChannelStates
// before t, or "" before the first.
func stateAt(tr *trace.Trace, t time.Duration) string {
	st := ""
	for _, e := range spec.ChannelStates(tr) {
		if e.T < t {
			st = e.State
		}
	}
	return st
}

// clientCloses are the connections to addr the client closed before t, as
// the backend saw them (conn-close; the simulator has no backends' view).
func clientCloses(tr *trace.Trace, addr string, before time.Duration) []trace.Event {
	return trace.Select(spec.Of(tr, trace.KindConnClose), func(e trace.Event) bool { return e.Addr == addr && e.T < before })
}

// liveConnection reports whether the client had a connection open to addr
// at t, as the backend saw them: one accepted before t that the client had
// not closed (conn-close) before t. known is false for a trace without the
// backends' view (the simulator's).
func liveConnection(tr *trace.Trace, addr string, t time.Duration) (live, known bool) {
	accepts := trace.Select(spec.Of(tr, trace.KindAccept), func(e trace.Event) bool { return e.Addr == addr && e.T < t })
	if len(spec.Of(tr, trace.KindAccept)) == 0 {
		return false, false
	}
	closed := map[string]bool{}
	for _, e := range clientCloses(tr, addr, t) {
		closed[e.Peer] = true
	}
	for _, a := range accepts {
		if !closed[a.Peer] {
			return true, true
		}
	}
	return false, true
}

// lastResult is the time of the run's last RPC result.
func lastResult(tr *trace.Trace) time.Duration {
	res := spec.Of(tr, trace.KindRPCResult)
	if len(res) == 0 {
		return 0
	}
	return res[len(res)-1].T
}

// healthUnhealthyIsTF: round_robin over one endpoint, whose address serves
// NOT_SERVING from 300 ms until r1 has its result: round_robin's state is
// its one child's, which is the chosen subchannel's health. r1 and r2 are
// sent heardAfter the backend sent the client each change.
func healthUnhealthyIsTF() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHealthWhy,
		Scenario: scenario.New("health-unhealthy-is-tf").
			Describe("round_robin, health checked; the client gets [b1/ipv4]; b1 is NOT_SERVING from 300 ms until r1's result; r1 100 ms after b1 sent the client NOT_SERVING, r2 100 ms after it sent SERVING again").
			Backend("b1", scenario.IPv4Only).
			ServiceConfig(healthChecked("round_robin")).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(300*time.Millisecond, notServing("b1/ipv4")).
			AfterDelay(sentHealth("b1/ipv4", "TRANSIENT_FAILURE", 1), heardAfter, scenario.RPC("r1")).
			After(scenario.On("rpc-result").WithRPC("r1"), serving("b1/ipv4")).
			AfterDelay(sentHealth("b1/ipv4", "READY", 2), heardAfter, scenario.RPC("r2")).
			FinishAfterEveryRPC().
			End(2 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			// A61, Reasons for Generic Health Reporting: reporting IDLE
			// instead would give the parent the wrong state.
			{Requirement: "A61-HEALTH-UNHEALTHY-IS-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				down, up := healthSetAt(g, tr, b1, "TRANSIENT_FAILURE"), healthSetAt(g, tr, b1, "READY")
				verdict.Require(stateAt(tr, down) == "READY", "the channel was %q, not READY, when b1 turned NOT_SERVING at %s", stateAt(tr, down), trace.FormatT(down))
				requireHeard(g, tr, healthSentAt(g, tr, b1, "TRANSIENT_FAILURE", 1), "b1's NOT_SERVING", "r1")
				requireHeard(g, tr, healthSentAt(g, tr, b1, "READY", 2), "b1's SERVING again", "r2")
				var during []string
				for _, e := range spec.ChannelStates(tr) {
					if e.T >= down && e.T < up {
						during = append(during, e.State)
					}
				}
				g.Expect(during).To(gomega.Equal([]string{"TRANSIENT_FAILURE"}), "the channel's states while b1 is unhealthy (IDLE would read as a lost connection)")
				r1 := spec.RPCResult(g, tr, "r1")
				g.Expect(r1.Code).To(gomega.Equal("UNAVAILABLE"), "r1, while b1 is unhealthy")
				g.Expect(spec.ServedBy(g, tr, "r2")).To(gomega.Equal("b1"), "r2, once b1 is healthy again")
			}},
			{Requirement: "A61-HEALTH-WATCH-CHOSEN", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				hs := spec.Of(tr, trace.KindSubchannelHealth)
				g.Expect(hs).NotTo(gomega.BeEmpty(), "no health watch")
				ready := map[string]time.Duration{}
				for _, e := range spec.Of(tr, trace.KindSubchannelState) {
					if _, ok := ready[e.Subchannel]; !ok && e.State == "READY" {
						ready[e.Subchannel] = e.T
					}
				}
				for _, e := range hs {
					t, ok := ready[e.Subchannel]
					g.Expect(ok && e.T >= t).To(gomega.BeTrue(), "health of %s, which was not chosen (READY) then", e.Subchannel)
				}
			}},
		},
	}
}

// healthOneUnhealthy: round_robin over b1 and b2; b1 serves NOT_SERVING from
// 300 ms until the RPCs of that time have their results. Its endpoint
// reports its chosen subchannel's health, so round_robin sends those RPCs
// to b2, and b1's connection, up all along, serves again once b1 is
// healthy. The RPCs are sent heardAfter the backend sent the client each
// change.
func healthOneUnhealthy() spec.Spec {
	b := scenario.New("health-one-unhealthy").
		Describe("round_robin, health checked; the client gets [b1/ipv4], [b2/ipv4]; b1 is NOT_SERVING from 300 ms until u1-u4's results; RPCs a1-a4 at 200 ms, u1-u4 100 ms after b1 sent the client NOT_SERVING, s1-s4 100 ms after it sent SERVING again").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		ServiceConfig(healthChecked("round_robin")).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4")))
	spec.SendRPCs(b, 200*time.Millisecond, spec.RPCIDs("a", 4))
	b.At(300*time.Millisecond, notServing("b1/ipv4"))
	spec.SendRPCsAfter(b, sentHealth("b1/ipv4", "TRANSIENT_FAILURE", 1), heardAfter, spec.RPCIDs("u", 4))
	b.After(scenario.On("rpc-result").Times(8), serving("b1/ipv4")) // a1-a4 and u1-u4
	spec.SendRPCsAfter(b, sentHealth("b1/ipv4", "READY", 2), heardAfter, spec.RPCIDs("s", 4))
	b.FinishAfterEveryRPC().End(6 * time.Second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHealth,
		Scenario: b.MustBuild(),
		Checks: []spec.Check{
			// A61, Generic Health Reporting Mechanism: the state the
			// chosen subchannel's health watch reports is the state
			// pick_first reports to its parent.
			{Requirement: "A61-HEALTH-WATCH-CHOSEN", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				spec.RequireConnectedBefore(tr, healthSetAt(g, tr, b1, "TRANSIENT_FAILURE"), "b1", "b2")
				requireHeard(g, tr, healthSentAt(g, tr, b1, "TRANSIENT_FAILURE", 1), "b1's NOT_SERVING", spec.RPCIDs("u", 4)...)
				requireHeard(g, tr, healthSentAt(g, tr, b1, "READY", 2), "b1's SERVING again", spec.RPCIDs("s", 4)...)
				g.Expect(spec.ServedByEach(g, tr, spec.RPCIDs("u", 4)...)).To(gomega.HaveEach("b2"), "the RPCs sent while b1 is unhealthy")
				g.Expect(spec.ServedByEach(g, tr, spec.RPCIDs("s", 4)...)).To(gomega.ContainElement("b1"), "the RPCs sent once b1 is healthy again")
			}},
			// A61, Generic Health Reporting Mechanism: connections follow
			// the raw connectivity state; A61, Reasons for Generic Health
			// Reporting: unhealthiness must not churn connections.
			{Requirement: "A61-HEALTH-RAW-STATE-CONNECTS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				spec.RequireConnectedBefore(tr, healthSetAt(g, tr, b1, "TRANSIENT_FAILURE"), "b1")
				expectConnectionKept(g, tr, b1, spec.RPCIDs("s", 4))
			}},
		},
	}
}

// expectConnectionKept checks that the client made one connection to addr
// and kept it to the end of its RPCs: one attempt, no close by the client
// (the backend's view: lab only), and, where the backends show it, the RPCs
// of ids that addr served came over that first connection.
func expectConnectionKept(g gomega.Gomega, tr *trace.Trace, addr string, ids []string) {
	as := spec.AttemptsTo(tr.Events, addr)
	g.ExpectWithOffset(1, as).To(gomega.HaveLen(1), "connection attempts to %s: being unhealthy is no reason to reconnect:%s", addr, spec.Render(as))
	closes := clientCloses(tr, addr, lastResult(tr))
	g.ExpectWithOffset(1, closes).To(gomega.BeEmpty(), "the client closed its connection to %s before its last RPC had its result:%s", addr, spec.Render(closes))
	port := fmt.Sprintf(":%d", as[0].Port)
	for _, id := range ids {
		if spec.ServedOn(g, tr, id) != addr {
			continue
		}
		if from, ok := spec.ServedFrom(g, tr, id); ok {
			g.ExpectWithOffset(1, from).To(gomega.HaveSuffix(port), "%s came over another connection than the first one to %s (client port %d)", id, addr, as[0].Port)
		}
	}
}

// healthChosenAddress: round_robin over a dual-stack b1 and b2; b1's IPv4
// address serves NOT_SERVING from the start, its IPv6 address SERVING. b1's
// pick_first connects to its first address, IPv4, and chooses it on its raw
// READY: the endpoint then reports that subchannel's health, unhealthy, and
// the healthy IPv6 address is never tried. Once r1-r4 have their results
// b1/ipv4 is healthy and serves. The RPCs are sent heardAfter the backend
// sent the client b1/ipv4's health.
func healthChosenAddress() spec.Spec {
	b := scenario.New("health-chosen-address").
		Describe("round_robin, health checked; the client gets [b1/ipv4, b1/ipv6], [b2/ipv4]; b1/ipv4 is NOT_SERVING until r1-r4's results, b1/ipv6 SERVING; RPCs r1-r4 100 ms after b1/ipv4 sent the client NOT_SERVING, s1-s4 100 ms after it sent SERVING").
		Backend("b1", scenario.Dual).Backend("b2", scenario.IPv4Only).
		ServiceConfig(healthChecked("round_robin")).
		At(0, notServing("b1/ipv4")).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4", "b1/ipv6"), scenario.EP("b2/ipv4")))
	spec.SendRPCsAfter(b, sentHealth("b1/ipv4", "TRANSIENT_FAILURE", 1), heardAfter, spec.RPCIDs("r", 4))
	b.After(scenario.On("rpc-result").Times(4), serving("b1/ipv4"))
	spec.SendRPCsAfter(b, sentHealth("b1/ipv4", "READY", 1), heardAfter, spec.RPCIDs("s", 4))
	b.FinishAfterEveryRPC().End(6 * time.Second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHealth,
		Labels:   []string{spec.LabelIPv6},
		Scenario: b.MustBuild(),
		Checks: []spec.Check{
			// A61, Generic Health Reporting Mechanism: pick_first chooses
			// on the raw connectivity state, only then watches the chosen
			// subchannel's health, and reports that.
			{Requirement: "A61-HEALTH-WATCH-CHOSEN", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				v4, v6 := spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b1/ipv6")
				verdict.Require(slices.ContainsFunc(spec.Of(tr, trace.KindSYNACK), func(e trace.Event) bool { return e.Addr == v4 }),
					"b1/ipv4 never accepted a connection: b1's pick_first chose no subchannel there")
				g.Expect(spec.AttemptsTo(tr.Events, v6)).To(gomega.BeEmpty(), "b1/ipv6: pick_first had chosen b1/ipv4, connected; its health is reported, not acted on")
				requireHeard(g, tr, healthSentAt(g, tr, v4, "TRANSIENT_FAILURE", 1), "b1/ipv4's NOT_SERVING", spec.RPCIDs("r", 4)...)
				requireHeard(g, tr, healthSentAt(g, tr, v4, "READY", 1), "b1/ipv4's SERVING", spec.RPCIDs("s", 4)...)
				g.Expect(spec.ServedByEach(g, tr, spec.RPCIDs("r", 4)...)).To(gomega.HaveEach("b2"), "the RPCs sent while b1's chosen address is unhealthy")
				var b1 []string
				for _, id := range spec.RPCIDs("s", 4) {
					if spec.ServedBy(g, tr, id) == "b1" {
						b1 = append(b1, spec.ServedOn(g, tr, id))
					}
				}
				g.Expect(b1).NotTo(gomega.BeEmpty(), "the RPCs sent once b1/ipv4 is healthy: none reached b1")
				g.Expect(b1).To(gomega.HaveEach(v4), "b1 serves over its chosen address")
			}},
		},
	}
}

// healthPickFirstAlone: pick_first used directly, with a healthCheckConfig:
// b1 serves NOT_SERVING from the start and r1 still goes to it, since only
// a petiole turns health reporting on.
func healthPickFirstAlone() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHealth,
		Scenario: scenario.New("health-pick-first-alone").
			Describe("pick_first, health checked; the client gets [b1/ipv4], NOT_SERVING from the start; r1 at 200 ms").
			Backend("b1", scenario.IPv4Only).
			ServiceConfig(healthChecked("pick_first")).
			At(0, notServing("b1/ipv4")).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(200*time.Millisecond, scenario.RPC("r1")).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(2 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			// A61, Generic Health Reporting Mechanism: the option can be
			// triggered by a parent policy, not by an application.
			{Requirement: "A61-HEALTH-PETIOLE-ONLY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b1"), "an unhealthy address still serves pick_first used directly")
				states := trace.Select(spec.ChannelStates(tr), func(e trace.Event) bool { return e.State == "TRANSIENT_FAILURE" })
				g.Expect(states).To(gomega.BeEmpty(), "the channel follows b1's connection, whatever its health service says:%s", spec.Render(states))
			}},
			{Requirement: "A61-HEALTH-PETIOLE-ONLY", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.Of(tr, trace.KindSubchannelHealth)).To(gomega.BeEmpty(), "pick_first on its own watches no health")
			}},
		},
	}
}

// healthNoneConfigured: round_robin without healthCheckConfig: b1 serves
// NOT_SERVING, for its overall health and for healthService, and nothing
// changes, since no health mechanism is configured.
func healthNoneConfigured() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHealth,
		Scenario: scenario.New("health-none-configured").
			Describe("round_robin, no healthCheckConfig; the client gets [b1/ipv4], NOT_SERVING from the start (overall and for the lab's service); r1 at 200 ms").
			Backend("b1", scenario.IPv4Only).
			LB("round_robin", `{}`).
			At(0, scenario.Health("b1/ipv4", scenario.NotServing)).
			At(0, notServing("b1/ipv4")).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(200*time.Millisecond, scenario.RPC("r1")).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(2 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			// A61, Generic Health Reporting Mechanism: with no mechanism
			// configured, the watch reports the raw connectivity state.
			{Requirement: "A61-HEALTH-NONE-IS-RAW", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b1"), "r1: b1 is connected, and no health is checked")
				spec.ExpectStateSequence(g, tr, []string{"CONNECTING", "READY"}, "the raw connectivity state, whatever the health service says")
			}},
		},
	}
}
