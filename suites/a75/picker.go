package a75

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/session"
	"github.com/conformlab/conform/suites/spec"
)

// sessionPickerBranches walks xds_override_host's picker (A75, Changes in
// xds_override_host LB Policy, pseudo-code) branch by branch. eds1
// (round_robin) has b1 and b2 (DRAINING) in priority 0, b3 and b4 in
// priority 1 (never started); override_host_status is the default
// [UNKNOWN, HEALTHY]; b4 listens on nothing. b3 drops SYNs until 1.3 s, so
// the subchannel d2 makes connects only at its SYN's retransmission, about
// 1 s later: d2's picks land while it is CONNECTING whatever the machine's
// pace (in the lab a connection otherwise takes well under a millisecond,
// and a loaded machine picked before CONNECTING and after READY).
//
//	1 s        d1 cookie [b2]: b2 is not eligible, nothing is: the child (b1)
//	1.1 s      d2 cookie [b2, b3]: b2 skipped, b3 eligible without a
//	           subchannel: created, CONNECTING (SYN dropped), d2 queued
//	d2 + 0.1 s n1, n2 without a session: the child (b1), not b3's READY one
//	d2 + 0.2 s r1 cookie [b3, b1], r2 cookie [b1, b3]: first READY in cookie order
//	d2 + 1 s   b3 stops (its connection drops: IDLE); 0.5 s later it starts again
//	d2 + 2 s   i1 cookie [b3]: the IDLE subchannel is asked to connect, i1 queued
//	d2 + 3 s   f1 cookie [b4]: created, fails (TRANSIENT_FAILURE): the child (b1)
//
// (d2: d2's result.)
func sessionPickerBranches() spec.Spec {
	b1, b2 := concrete("b1", 0, scenario.IPv4), concrete("b2", 1, scenario.IPv4)
	b3, b4 := concrete("b3", 2, scenario.IPv4), concrete("b4", 3, scenario.IPv4)
	la := xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{
		{Localities: []xds.Locality{{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{
			{Addr: "b1/ipv4"}, {Addr: "b2/ipv4", Health: xds.HealthDraining}}}}},
		{Localities: []xds.Locality{{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{
			{Addr: "b3/ipv4"}, {Addr: "b4/ipv4"}}}}},
	}}
	b := scenario.New("session-picker-branches").
		Describe("eds1 (round_robin): p0 = [b1, b2 DRAINING], p1 = [b3, b4], b4 down; sessions on [b2], [b2, b3], "+
			"RPCs without a session, [b3, b1], [b1, b3]; b3 stops and starts (IDLE); [b3]; [b4] (TRANSIENT_FAILURE)").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		Backend("b4", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.Fault("b4/ipv4", scenario.Down)).
		At(0, scenario.Fault("b3/ipv4", scenario.Drop)).
		At(0, scenario.ServeXDS(spec.XDSResources("eds1", []xds.Cluster{eds("eds1", xds.RoundRobin)}, la)))
	spec.SendRPCs(b, time.Second, []string{"d1"}, session.Cookie(b2))
	spec.SendRPCs(b, 1100*time.Millisecond, []string{"d2"}, session.Cookie(b2, b3))
	b.At(1300*time.Millisecond, scenario.Clear("b3/ipv4"))
	d2 := scenario.On("rpc-result").WithRPC("d2")
	spec.SendRPCsAfter(b, d2, 100*time.Millisecond, []string{"n1", "n2"})
	spec.SendRPCsAfter(b, d2, 200*time.Millisecond, []string{"r1"}, session.Cookie(b3, b1))
	spec.SendRPCsAfter(b, d2, 300*time.Millisecond, []string{"r2"}, session.Cookie(b1, b3))
	b.AfterDelay(d2, time.Second, scenario.Stop("b3"))
	b.AfterDelay(d2, 1500*time.Millisecond, scenario.Start("b3"))
	spec.SendRPCsAfter(b, d2, 2*time.Second, []string{"i1"}, session.Cookie(b3))
	spec.SendRPCsAfter(b, d2, 3*time.Second, []string{"f1"}, session.Cookie(b4))
	s := b.FinishAfterEveryRPC().End(9 * time.Second).MustBuild()

	return spec.Spec{
		Doc: requirement.A75, Section: sectionOverride,
		Scenario:  s,
		Agreement: agreement(s),
		Checks: []spec.Check{
			{Requirement: "A75-OVERRIDE-PICK-ELIGIBLE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "d1")).To(gomega.Equal("b1"),
					"b2 is DRAINING, not in override_host_status [UNKNOWN, HEALTHY]: the cookie should not be followed")
				g.Expect(spec.ServedBy(g, tr, "d2")).To(gomega.Equal("b3"),
					"cookie [b2, b3]: b2 is not eligible, b3 is (in the map, HEALTHY enough, with no subchannel yet)")
			}},
			{Requirement: "A75-OVERRIDE-PICK-ELIGIBLE", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.SubchannelsOf(tr, spec.Addr(tr, "b2/ipv4"))).To(gomega.BeEmpty(),
					"no subchannel should ever be made for DRAINING b2, though two cookies name it")
			}},
			{Requirement: "A75-OVERRIDE-PICK-ELSE-DELEGATES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "d1")).To(gomega.Equal("b1"), "no eligible address: the child picker (b1)")
				g.Expect(spec.ServedBy(g, tr, "f1")).To(gomega.Equal("b1"),
					"the only eligible address, b4, is in TRANSIENT_FAILURE: the child picker (b1)")
			}},
			{Requirement: "A75-OVERRIDE-PICK-ELSE-DELEGATES", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				sc := spec.SubchannelsOf(tr, spec.Addr(tr, "b4/ipv4"))
				g.Expect(sc).To(gomega.HaveLen(1), "f1's pick should create b4's subchannel:%s", spec.Render(sc))
				tf := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState), func(e trace.Event) bool {
					return e.Subchannel == sc[0].Subchannel && e.State == "TRANSIENT_FAILURE"
				})
				g.Expect(tf).NotTo(gomega.BeEmpty(), "b4's subchannel should fail (nothing listens)")
				p := spec.PicksOf(tr, "f1")
				g.Expect(p).NotTo(gomega.BeEmpty())
				last := p[len(p)-1]
				g.Expect(last.Addr).To(gomega.Equal(spec.Addr(tr, "b1/ipv4")), "f1's last pick:%s", spec.Render(p))
				g.Expect(last.T).To(gomega.BeNumerically(">=", tf[0].T), "f1 goes to the child once b4 is in TRANSIENT_FAILURE:%s", spec.Render(p))
			}},
			{Requirement: "A75-OVERRIDE-PICK-NO-ATTR-DELEGATES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedByEach(g, tr, "n1", "n2")).To(gomega.Equal([]string{"b1", "b1"}),
					"RPCs without the session attribute go to the child, whose only endpoint is b1")
			}},
			{Requirement: "A75-OVERRIDE-PICK-NO-ATTR-DELEGATES", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// b3's subchannel, READY since d2, is the policy's, not the child's.
				g.Expect(readyBefore(tr, spec.Addr(tr, "b3/ipv4"), spec.RPCStart(g, tr, "n1"))).To(gomega.BeTrue(),
					"b3's subchannel should be READY when n1 is sent")
				for _, id := range []string{"n1", "n2"} {
					p := spec.PicksOf(tr, id)
					g.Expect(p).To(gomega.HaveLen(1), "%s is picked at once, by the child:%s", id, spec.Render(p))
					g.Expect(p[0].Addr).To(gomega.Equal(spec.Addr(tr, "b1/ipv4")))
				}
			}},
			{Requirement: "A75-OVERRIDE-PICK-READY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b3"), "cookie [b3, b1], both READY: the first in cookie order")
				g.Expect(spec.ServedBy(g, tr, "r2")).To(gomega.Equal("b1"), "cookie [b1, b3], both READY: the first in cookie order")
			}},
			{Requirement: "A75-OVERRIDE-PICK-READY", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, c := range []struct {
					id   string
					addr scenario.Addr
				}{{"r1", "b3/ipv4"}, {"r2", "b1/ipv4"}} {
					p := spec.PicksOf(tr, c.id)
					g.Expect(p).To(gomega.HaveLen(1), "%s is picked at once, no queueing:%s", c.id, spec.Render(p))
					g.Expect(p[0].Addr).To(gomega.Equal(spec.Addr(tr, c.addr)))
				}
			}},
			{Requirement: "A75-OVERRIDE-PICK-CONNECTING-QUEUES", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectConnectingQueues(g, tr, "d2", "b3/ipv4")
			}},
			{Requirement: "A75-OVERRIDE-PICK-IDLE-CONNECTS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "i1")).To(gomega.Equal("b3"), "the session reaches b3 again once its subchannel reconnects")
			}},
			{Requirement: "A75-OVERRIDE-PICK-IDLE-CONNECTS", Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				i1 := spec.RPCStart(g, tr, "i1")
				sc := spec.SubchannelsOf(tr, spec.Addr(tr, "b3/ipv4"))
				g.Expect(sc).To(gomega.HaveLen(1), "b3 keeps one subchannel, reconnected, not replaced:%s", spec.Render(sc))
				id := sc[0].Subchannel
				st := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState), func(e trace.Event) bool {
					return e.Subchannel == id && e.T < i1
				})
				g.Expect(st).NotTo(gomega.BeEmpty())
				g.Expect(st[len(st)-1].State).To(gomega.Equal("IDLE"), "b3's subchannel should be IDLE when i1 is sent:%s", spec.Render(st))
				conn := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelConnect), func(e trace.Event) bool {
					return e.Subchannel == id && e.T >= i1
				})
				g.Expect(conn).NotTo(gomega.BeEmpty(), "i1's pick should ask b3's IDLE subchannel to connect")
				spec.RequireSteadyMachine(tr, i1, conn[0].T, "connection asked by i1's pick")
				g.Expect(conn[0].T-i1).To(gomega.BeNumerically("<=", spec.Within(tr, labSlack)), "at once")
				p := spec.PicksOf(tr, "i1")
				g.Expect(len(p)).To(gomega.BeNumerically(">=", 2), "i1 queued, then picked:%s", spec.Render(p))
				g.Expect(p[0].Detail).To(gomega.Equal("queued"), "i1's first pick queues:%s", spec.Render(p))
				g.Expect(p[len(p)-1].Subchannel).To(gomega.Equal(id))
			}},
		},
	}
}

// expectConnectingQueues checks that RPC id, whose cookie names addr,
// was queued while addr's one subchannel was CONNECTING, and that no other
// connection attempt was made for addr until it was READY (A75: "if none
// is READY or IDLE but one is CONNECTING, queue").
func expectConnectingQueues(g gomega.Gomega, tr *trace.Trace, id string, addr scenario.Addr) {
	sc := spec.SubchannelsOf(tr, spec.Addr(tr, addr))
	g.Expect(sc).To(gomega.HaveLen(1), "one subchannel for %s:%s", addr, spec.Render(sc))
	sub := sc[0].Subchannel
	of := func(k trace.Kind, state string) []trace.Event {
		return trace.Select(tr.Events, trace.OfKind(k), func(e trace.Event) bool {
			return e.Subchannel == sub && (state == "" || e.State == state)
		})
	}
	connecting, ready := of(trace.KindSubchannelState, "CONNECTING"), of(trace.KindSubchannelState, "READY")
	g.Expect(connecting).NotTo(gomega.BeEmpty())
	g.Expect(ready).NotTo(gomega.BeEmpty())
	from, to := connecting[0].T, ready[0].T
	p := spec.PicksOf(tr, id)
	during := trace.Select(p, func(e trace.Event) bool { return e.T >= from && e.T < to })
	// The scenario sends id to land while the subchannel connects; on a
	// loaded machine its picks may come before the subchannel reports
	// CONNECTING (still IDLE: another branch of the rule) and the next one
	// after READY. Then the run did not exercise this branch.
	verdict.Require(len(during) > 0, "no pick of %s came while %s was CONNECTING (%s to %s), the state this branch of the picker judges:%s",
		id, addr, trace.FormatT(from), trace.FormatT(to), spec.Render(p))
	g.Expect(during).To(gomega.HaveEach(gomega.HaveField("Detail", "queued")),
		"%s's picks while %s is CONNECTING should queue:%s", id, addr, spec.Render(p))
	conns := trace.Select(of(trace.KindSubchannelConnect, ""), func(e trace.Event) bool { return e.T < to })
	g.Expect(conns).To(gomega.HaveLen(1), "one connection attempt for %s until READY, not one per pick:%s", addr, spec.Render(conns))
	g.Expect(p[len(p)-1].Subchannel).To(gomega.Equal(sub), "%s is picked on %s's subchannel once READY", id, addr)
}

// readyBefore reports whether the last state the subchannel for addr
// reported before t is READY.
func readyBefore(tr *trace.Trace, addr string, t time.Duration) bool {
	sc := spec.SubchannelsOf(tr, addr)
	return len(sc) > 0 && spec.SubchannelStateBefore(tr, sc[len(sc)-1].Subchannel, t) == "READY"
}
