package a61

import (
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

const (
	sectionLeaf       = "Use pick_first as the Universal Leaf Policy"
	sectionMoveOut    = "Move pick_first Logic Out of Subchannel (Java/Go)"
	sectionUpdatesGo  = "Address List Updates in Java/Go"
	sectionHealth     = "Generic Health Reporting Mechanism"
	sectionHealthWhy  = "Reasons for Generic Health Reporting"
	sectionRingHash   = "Ring Hash"
	dualEndpointsDesc = "[b1/ipv6, b1/ipv4], [b2/ipv6, b2/ipv4]"
)

// rrDualStack: round_robin over two dual-stack endpoints, b1's IPv6 address
// refusing. Each endpoint gets one pick_first child, which connects once:
// b1 over IPv4 after its IPv6 address failed, b2 over IPv6.
func rrDualStack() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionLeaf,
		Scenario: scenario.New("rr-dual-stack").
			Describe("round_robin; the client gets "+dualEndpointsDesc+"; b1/ipv6 refuses; four RPCs").
			Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).
			LB("round_robin", `{}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"), scenario.EP("b2/ipv6", "b2/ipv4"))).
			At(100*time.Millisecond, scenario.RPC("r1")).
			At(110*time.Millisecond, scenario.RPC("r2")).
			At(120*time.Millisecond, scenario.RPC("r3")).
			At(130*time.Millisecond, scenario.RPC("r4")).
			FinishAfterEveryRPC().
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-PETIOLE-PF-CHILD", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// One connection per endpoint, made by Happy Eyeballs over
				// the endpoint's addresses.
				g.Expect(connectionsPerBackend(tr)).To(gomega.Equal(map[string]int{"b1": 1, "b2": 1}))
				b1v6, b1v4, b2v4 := spec.Addr(tr, "b1/ipv6"), spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4")
				g.Expect(attemptsTo(tr, b2v4, 0)).To(gomega.BeEmpty(), "b2 connected over IPv6: its IPv4 address is not tried")
				v6, v4 := attemptsTo(tr, b1v6, 0), attemptsTo(tr, b1v4, 0)
				g.Expect(v6).To(gomega.HaveLen(1))
				g.Expect(v4).To(gomega.HaveLen(1))
				spec.RequireSteadyMachine(tr, v6[0], v4[0], "attempt to b1/ipv4 once b1/ipv6 failed")
				g.Expect(v4[0]-v6[0]).To(gomega.BeNumerically("<", 100*time.Millisecond), "b1/ipv4 right after b1/ipv6 failed")
				backends := map[string]int{}
				for _, r := range spec.Of(tr, trace.KindRPCResult) {
					backends[r.Backend]++
				}
				g.Expect(backends).To(gomega.Equal(map[string]int{"b1": 2, "b2": 2}), "RPCs spread over both endpoints")
			}},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// oneAddressPerSubchannel: the same run, seen from the subchannels.
func oneAddressPerSubchannel() spec.Spec {
	s := rrDualStack()
	s.Section = sectionMoveOut
	s.Scenario = cloneScenario(s.Scenario, "subchannel-one-address")
	s.Checks = []spec.Check{
		// A subchannel's addresses are the policy's to see: from outside,
		// a connection to one address looks the same either way.
		{Requirement: "A61-SUBCHANNEL-ONE-ADDRESS", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
			news := spec.Of(tr, trace.KindSubchannelNew)
			g.Expect(news).To(gomega.HaveLen(3), "b1/ipv6, b1/ipv4, b2/ipv6")
			for _, e := range news {
				g.Expect(e.Addrs).To(gomega.HaveLen(1), "subchannel %s", e.Subchannel)
			}
			g.Expect(spec.Of(tr, trace.KindSubchannelAddrs)).To(gomega.BeEmpty(), "a subchannel's address never changes")
		}},
	}
	return s
}

func cloneScenario(s *scenario.Scenario, name string) *scenario.Scenario {
	c := *s
	c.Name = name
	return &c
}

// rrErrorDetail: every endpoint of round_robin refuses; an RPC fails with a
// child's connection error, which names the address that failed.
func rrErrorDetail() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionLeaf,
		Scenario: scenario.New("rr-error-detail").
			Describe("round_robin; the client gets [b1/ipv6, b1/ipv4], [b2/ipv4]; all refuse; r1 at 100 ms").
			Backend("b1", scenario.Dual).Backend("b2", scenario.IPv4Only).
			LB("round_robin", `{}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Reset)).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"), scenario.EP("b2/ipv4"))).
			At(100*time.Millisecond, scenario.RPC("r1")).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-PETIOLE-ERROR-DETAIL", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				res := spec.Of(tr, trace.KindRPCResult)
				g.Expect(res).To(gomega.HaveLen(1))
				g.Expect(res[0].Code).To(gomega.Equal("UNAVAILABLE"))
				named := false
				for _, a := range addrs(tr, "b1/ipv6", "b1/ipv4", "b2/ipv4") {
					named = named || strings.Contains(res[0].Err, a)
				}
				g.Expect(named).To(gomega.BeTrue(), "the error should carry a child's connection error, naming its address: %q", res[0].Err)
				g.Expect(strings.ToLower(res[0].Err)).To(gomega.ContainSubstring("refused"), "and why it failed")
			}},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// rrReorder: the second list gives b1's endpoint its addresses in the other
// order. Same set, same endpoint: nothing is rebuilt; but the new order
// reaches b1's pick_first child, which shows when b1's IPv6 connection goes
// down at 400 ms and the child reconnects IPv4 first.
func rrReorder() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionUpdatesGo,
		Scenario: scenario.New("rr-reorder").
			Describe("round_robin; the client gets "+dualEndpointsDesc+", then at 200 ms [b1/ipv4, b1/ipv6], [b2/ipv6, b2/ipv4]; b1/ipv6 goes down at 400 ms").
			Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).
			LB("round_robin", `{}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"), scenario.EP("b2/ipv6", "b2/ipv4"))).
			At(200*time.Millisecond, scenario.Resolve(scenario.EP("b1/ipv4", "b1/ipv6"), scenario.EP("b2/ipv6", "b2/ipv4"))).
			At(400*time.Millisecond, scenario.Fault("b1/ipv6", scenario.Down)).
			End(700 * time.Millisecond).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-PETIOLE-ENDPOINT-IDENTITY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				up := nthUpdate(tr, 2)
				// The fault's time as scheduled: the lab records fault-set
				// once the address is down, after its connection was cut.
				const down = 400 * time.Millisecond
				changes := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelNew, trace.KindSubchannelShutdown, trace.KindSubchannelConnect, trace.KindSYN),
					func(e trace.Event) bool { return e.T >= up && e.T < down })
				g.Expect(changes).To(gomega.BeEmpty(), "[b1/ipv4, b1/ipv6] is the endpoint [b1/ipv6, b1/ipv4]: nothing to rebuild")
			}},
			{Requirement: "A61-PETIOLE-REORDER-PUSHED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				const down = 400 * time.Millisecond
				v4, v6 := spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b1/ipv6")
				// The fault must take b1's connection: one open on b1/ipv6,
				// none on b1/ipv4. A client that rebuilt b1's endpoint at
				// the reorder (A61-PETIOLE-ENDPOINT-IDENTITY's fail) is
				// connected over IPv4 by then, whatever became of its old
				// connection: the fault takes nothing from it.
				live6, known := liveConnection(tr, v6, down)
				live4, _ := liveConnection(tr, v4, down)
				verdict.Require(!known || live6 && !live4,
					"b1 was not connected over %s alone when that address went down at %v (open there: %v; open on %s: %v): the fault took no connection b1 needed", v6, down, live6, v4, live4)
				as := trace.Select(attempts(tr, down), func(e trace.Event) bool { return e.Addr == v4 || e.Addr == v6 })
				if len(as) == 0 {
					verdict.NoSign("b1 never reconnected after losing its connection")
				}
				if !spec.HasPolicy(tr) && as[0].Addr == v6 {
					// From outside, a first attempt to the address b1 was
					// connected to is what a subchannel reconnecting by
					// itself does too (grpc-js's pick_first restarts the
					// subchannel that dropped), whatever order its child
					// holds: the run cannot tell whether the order was pushed.
					verdict.Require(false, "b1's first attempt after the loss went to %s, the address its connection had been on: a subchannel reconnecting by itself explains it as well as an order never pushed", v6)
				}
				g.Expect(as[0].Addr).To(gomega.Equal(v4), "b1's child should have the new order, IPv4 first")
			}},
		},
		Agreement: &compare.Options{
			Select: []trace.Pred{trace.OfKind(trace.KindSYN), func(e trace.Event) bool { return !e.Retransmit }},
			Ignore: []string{"peer", "backend"}, Tolerance: labSlack,
		},
	}
}

// rrChangedSet: the second list removes b2's IPv4 address. A different set
// is a different endpoint: b2's child is replaced, with a connection of its
// own, while b1's is kept.
func rrChangedSet() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionUpdatesGo,
		Scenario: scenario.New("rr-changed-set").
			Describe("round_robin; the client gets "+dualEndpointsDesc+", then at 200 ms [b1/ipv6, b1/ipv4], [b2/ipv6]").
			Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).
			LB("round_robin", `{}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"), scenario.EP("b2/ipv6", "b2/ipv4"))).
			At(200*time.Millisecond, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"), scenario.EP("b2/ipv6"))).
			End(400 * time.Millisecond).
			MustBuild(),
		Checks: []spec.Check{
			// From outside, the new child's new connection: the rule is
			// Java's and Go's, which pool no subchannels, so a new endpoint
			// connects anew (the churn A61, Address List Updates in
			// Java/Go, accepts). grpc-js and C-core pool subchannels by
			// address, where nothing would differ on the wire; the
			// catalogue scopes the rule to Java and Go.
			{Requirement: "A61-PETIOLE-CHANGED-SET-NEW", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(connectionsPerBackend(tr)["b2"]).To(gomega.Equal(2), "b2's endpoint changed: a new child, connecting anew")
				if !spec.HasPolicy(tr) {
					return
				}
				up := nthUpdate(tr, 2)
				b2 := spec.Addr(tr, "b2/ipv6")
				var olds, news []trace.Event
				for _, e := range spec.SubchannelEvents(tr, b2, trace.KindSubchannelNew) {
					if e.T < up {
						olds = append(olds, e)
					} else {
						news = append(news, e)
					}
				}
				g.Expect(olds).To(gomega.HaveLen(1))
				g.Expect(news).To(gomega.HaveLen(1), "a new child, with a new subchannel for b2/ipv6")
				sd := trace.Select(spec.Of(tr, trace.KindSubchannelShutdown), func(e trace.Event) bool {
					return e.Subchannel == olds[0].Subchannel && e.T < tr.Header.Scenario.End
				})
				g.Expect(sd).To(gomega.HaveLen(1), "the old child's subchannel is shut down")
			}},
			{Requirement: "A61-PETIOLE-SET-DIFF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				up, end := nthUpdate(tr, 2), tr.Header.Scenario.End // the channel's close shuts down everything
				for _, a := range addrs(tr, "b1/ipv6", "b1/ipv4") {
					g.Expect(attemptsTo(tr, a, up)).To(gomega.BeEmpty(), "b1's endpoint is on both lists: kept, with its connection")
					g.Expect(trace.Select(spec.SubchannelEvents(tr, a, trace.KindSubchannelNew), func(e trace.Event) bool { return e.T >= up })).
						To(gomega.BeEmpty(), "b1's endpoint is on both lists: kept")
					g.Expect(trace.Select(spec.SubchannelEvents(tr, a, trace.KindSubchannelShutdown), func(e trace.Event) bool { return e.T >= up && e.T < end })).
						To(gomega.BeEmpty(), "b1's endpoint is on both lists: kept")
				}
				g.Expect(connectionsPerBackend(tr)["b1"]).To(gomega.Equal(1))
			}},
		},
		Agreement: &compare.Options{
			Select: []trace.Pred{trace.OfKind(trace.KindSYN), func(e trace.Event) bool { return !e.Retransmit }},
			Ignore: []string{"peer", "backend"}, Tolerance: labSlack,
		},
	}
}
