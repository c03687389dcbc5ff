package a75

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/session"
	"github.com/conformlab/conform/suites/spec"
)

// overrideIdle is the cluster's idle_timeout in overrideLastUsedTime.
const overrideIdle = 10 * time.Second

// minSweepGap is A75's minimum time between two sweeps.
const minSweepGap = 5 * time.Second

// overrideLastUsedTime walks xds_override_host's subchannel ownership and
// last_used_time (A75, Changes in xds_override_host LB Policy). eds1
// (round_robin, idle_timeout 10 s) has b1, b2 and b3 in priority 0.
//
//	1 s    s1 cookie [b2]: b2's entry is used for a session
//	1.5 s  n1…n6 without a session: round_robin over b1, b2, b3
//	2 s    b2 and b3 move to priority 1: priority 0's round_robin drops
//	       their subchannels; b2's was used for a session 1 s before
//	       (kept), b3's only by RPCs without a session (closed)
//	3 s    s2 cookie [b2]: the kept subchannel
//	7 s    s3 cookie [b2]: b2's last use for a session
//	7.1 s  c1, a session without a cookie: the child picks b1, and b1's
//	       list is reported back (b1's entry is now used for a session)
//	10 s   the first sweep, idle_timeout after the start (the reference's
//	       schedule, A75's MAY): b2 was used 3 s ago
//	17 s   the next sweep, timed from the least recently used entry's
//	       last_used_time (b2's): b2 is let go
func overrideLastUsedTime() spec.Spec {
	b2 := concrete("b2", 1, scenario.IPv4)
	cluster := eds("eds1", xds.RoundRobin)
	cluster.UpstreamConfig = httpOpts(true, &xds.Duration{Seconds: int64(overrideIdle / time.Second)})
	res := func(prios ...[]scenario.Addr) xds.Resources {
		return spec.XDSResources("eds1", []xds.Cluster{cluster}, assignment("eds1", prios...))
	}
	b := scenario.New("override-last-used-time").
		Describe("eds1 (round_robin, idle_timeout 10 s): p0 = [b1, b2, b3]; session s on b2 at 1 s; six RPCs n without a "+
			"session at 1.5 s; at 2 s b2 and b3 move to p1; session s on b2 at 3 s and 7 s; session c without a cookie at 7.1 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(res(addrs("b1/ipv4", "b2/ipv4", "b3/ipv4"))))
	spec.SendRPCs(b, time.Second, []string{"s1"}, session.Cookie(b2))
	spec.SendRPCs(b, 1500*time.Millisecond, spec.RPCIDs("n", 6))
	b.At(2*time.Second, scenario.ServeXDS(res(addrs("b1/ipv4"), addrs("b2/ipv4", "b3/ipv4"))))
	spec.SendRPCs(b, 3*time.Second, []string{"s2"}, session.Cookie(b2))
	spec.SendRPCs(b, 7*time.Second, []string{"s3"}, session.Cookie(b2))
	spec.SendRPCs(b, 7100*time.Millisecond, []string{"c1"}, session.WithoutCookie())
	s := b.End(19 * time.Second).MustBuild()

	return spec.Spec{
		Doc: requirement.A75, Section: sectionOverride,
		Scenario:  s,
		Agreement: spreadAgreement(s),
		Labels:    []string{spec.LabelSlow},
		Checks: []spec.Check{
			{Requirement: "A75-OVERRIDE-ADOPT-ON-CHILD-UNREF", Needs: policyEvents, Assert: expectAdopted},
			{Requirement: "A75-OVERRIDE-CHILD-UNREF-STALE", Needs: policyEvents, Assert: expectStaleClosed},
			{Requirement: "A75-OVERRIDE-LAST-USED-SSA-ONLY", Needs: policyEvents, Assert: expectSessionOnlyRefreshes},
			{Requirement: "A75-OVERRIDE-LAST-USED-TIME", Needs: policyEvents, Assert: expectHeldFromLastUse},
			{Requirement: "A75-OVERRIDE-SWEEP-MIN-5S", Needs: policyEvents, Assert: expectSweepsApart},
			{Requirement: "A75-OVERRIDE-PICK-CHILD-REPORTS", Needs: policyEvents, Assert: expectChildReports},
		},
	}
}

// expectAdopted: b2's one subchannel, the child's until the move, is not
// shut down when priority 0's round_robin drops it (its entry was used for
// a session 1 s before), and carries the session's later RPCs at once.
func expectAdopted(g gomega.Gomega, tr *trace.Trace) {
	sc := spec.SubchannelsOf(tr, spec.Addr(tr, "b2/ipv4"))
	g.Expect(sc).To(gomega.HaveLen(1), "b2 keeps the subchannel the child made:%s", spec.Render(sc))
	g.Expect(sc[0].T).To(gomega.BeNumerically("<", spec.RPCStart(g, tr, "s1")), "made by the child, before any session")
	last := spec.RPCStart(g, tr, "s3")
	for _, e := range shutdowns(tr, sc[0].Subchannel) {
		g.Expect(e.T).To(gomega.BeNumerically(">", last),
			"b2's subchannel, dropped by the child at the move 1 s after a session used it, should be kept:%s", spec.Render(shutdowns(tr, sc[0].Subchannel)))
	}
	for _, id := range []string{"s2", "s3"} {
		p := spec.PicksOf(tr, id)
		g.Expect(p).To(gomega.HaveLen(1), "%s is picked at once, on the kept subchannel:%s", id, spec.Render(p))
		g.Expect(p[0].Subchannel).To(gomega.Equal(sc[0].Subchannel))
	}
}

// expectStaleClosed: b3's subchannel, which no session ever used, is shut
// down as soon as the child drops it at the move.
func expectStaleClosed(g gomega.Gomega, tr *trace.Trace) {
	move := moveUpdate(g, tr)
	sc := spec.SubchannelsOf(tr, spec.Addr(tr, "b3/ipv4"))
	g.Expect(sc).To(gomega.HaveLen(1), "one subchannel for b3:%s", spec.Render(sc))
	sd := shutdowns(tr, sc[0].Subchannel)
	g.Expect(sd).NotTo(gomega.BeEmpty(), "b3's subchannel, never used for a session, should not be kept once the child drops it")
	g.Expect(sd[0].T).To(gomega.BeNumerically(">=", move), "not before the move (%s)", trace.FormatT(move))
	spec.RequireSteadyMachine(tr, move, sd[0].T, "shutdown of b3's subchannel after the move")
	g.Expect(sd[0].T-move).To(gomega.BeNumerically("<=", spec.Within(tr, labSlack)),
		"at once when the child drops it at the move (%s), not at a later sweep:%s", trace.FormatT(move), spec.Render(sd))
}

// expectSessionOnlyRefreshes: b3 carried RPCs without a session after b2
// was last used for one; b2's subchannel is kept at the move and b3's is
// not: only session picks count as use (last_used_time).
func expectSessionOnlyRefreshes(g gomega.Gomega, tr *trace.Trace) {
	b3 := spec.Addr(tr, "b3/ipv4")
	s1 := spec.PicksOf(tr, "s1")
	g.Expect(s1).NotTo(gomega.BeEmpty())
	var viaChild []trace.Event
	for _, id := range spec.RPCIDs("n", 6) {
		for _, p := range spec.PicksOf(tr, id) {
			if p.Addr == b3 {
				viaChild = append(viaChild, p)
			}
		}
	}
	g.Expect(viaChild).NotTo(gomega.BeEmpty(), "round_robin should send some of n1…n6 to b3")
	g.Expect(viaChild[len(viaChild)-1].T).To(gomega.BeNumerically(">", s1[len(s1)-1].T), "b3's last pick without a session comes after b2's session pick")
	move := moveUpdate(g, tr)
	kept := func(a scenario.Addr) bool {
		sc := spec.SubchannelsOf(tr, spec.Addr(tr, a))
		g.Expect(sc).NotTo(gomega.BeEmpty())
		sd := shutdowns(tr, sc[0].Subchannel)
		if len(sd) > 0 && sd[0].T < move+time.Second {
			spec.RequireSteadyMachine(tr, move, sd[0].T, "shutdown of "+string(a)+"'s subchannel after the move")
		}
		return len(sd) == 0 || sd[0].T > move+spec.Within(tr, labSlack)
	}
	g.Expect(kept("b2/ipv4")).To(gomega.BeTrue(), "b2's subchannel, used for a session, should be kept at the move")
	g.Expect(kept("b3/ipv4")).To(gomega.BeFalse(),
		"b3's subchannel should not be kept: its picks without a session must not refresh last_used_time:%s", spec.Render(viaChild))
}

// expectHeldFromLastUse: b2's subchannel, owned by the policy since the
// move, is not let go before idle_timeout has passed since the session's
// last pick of b2 (s3 at 7 s), though its first use (1 s) was idle_timeout
// ago already at 11 s: its entry records the last use. (When it is let go
// is the sweep's business: A75-OVERRIDE-SWEEP-UNREF.)
func expectHeldFromLastUse(g gomega.Gomega, tr *trace.Trace) {
	p := spec.PicksOf(tr, "s3")
	g.Expect(p).NotTo(gomega.BeEmpty())
	last := p[len(p)-1].T
	sc := spec.SubchannelsOf(tr, spec.Addr(tr, "b2/ipv4"))
	g.Expect(sc).To(gomega.HaveLen(1), "b2 keeps the subchannel the child made:%s", spec.Render(sc))
	g.Expect(p[len(p)-1].Subchannel).To(gomega.Equal(sc[0].Subchannel), "s3 is picked on b2's subchannel")
	for _, e := range shutdowns(tr, sc[0].Subchannel) {
		g.Expect(e.T).To(gomega.BeNumerically(">=", last+overrideIdle),
			"held until idle_timeout after the last session pick (%s), not the first (%s)", trace.FormatT(last), trace.FormatT(spec.RPCStart(g, tr, "s1")))
	}
}

// expectSweepsApart: the run sees at least two sweeps (the reference's
// come at 10 s and 17 s), each at least 5 s after the one before. When
// they come is A75's MAY (A75-OVERRIDE-SWEEP-SCHEDULE), left unchecked.
func expectSweepsApart(g gomega.Gomega, tr *trace.Trace) {
	fires := sweepFires(tr)
	g.Expect(len(fires)).To(gomega.BeNumerically(">=", 2), "the run should see at least two sweeps: %v", spec.Times(fires))
	for i := 1; i < len(fires); i++ {
		g.Expect(fires[i].T-fires[i-1].T).To(gomega.BeNumerically(">=", minSweepGap), "sweeps should be at least 5 s apart: %v", spec.Times(fires))
	}
}

// expectChildReports: c1, in a session without a cookie, is picked by the
// child (b1), and b1's endpoint address list is reported back for the
// cookie.
func expectChildReports(g gomega.Gomega, tr *trace.Trace) {
	b1 := spec.Addr(tr, "b1/ipv4")
	p := spec.PicksOf(tr, "c1")
	g.Expect(p).NotTo(gomega.BeEmpty())
	last := p[len(p)-1]
	g.Expect(last.Addr).To(gomega.Equal(b1), "c1 goes to the child's b1:%s", spec.Render(p))
	g.Expect(last.SessionAddrs).To(gomega.Equal([]string{b1}), "the child's pick of b1 should report b1's address list for the cookie:%s", spec.Render(p))
}

// moveUpdate is when the channel got the resources moving b2 and b3 to
// priority 1: the first resolver update from 2 s on.
func moveUpdate(g gomega.Gomega, tr *trace.Trace) time.Duration {
	us := trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate), func(e trace.Event) bool { return e.T >= 2*time.Second })
	g.Expect(us).NotTo(gomega.BeEmpty(), "the move should reach the channel as a resolver update")
	return us[0].T
}
