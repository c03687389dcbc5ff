package a61

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/session"
	"github.com/conformlab/conform/suites/spec"
)

// sectionSSA is the document's section on stateful session affinity.
const sectionSSA = "Changes to Stateful Session Affinity"

// ssaPolicy is the Needs of a check that reads xds_override_host's picks.
var ssaPolicy = []trace.Source{trace.SourcePolicy}

// ssaEndpoint is an EDS endpoint: addr with additional_addresses more.
func ssaEndpoint(addr scenario.Addr, more ...scenario.Addr) xds.Endpoint {
	return xds.Endpoint{Addr: addr, AdditionalAddrs: more}
}

// ssaResources: eds1 (round_robin) with the endpoint [b1/ipv6, b1/ipv4] in
// priority 0 and e2 in priority 1.
func ssaResources(e2 xds.Endpoint) xds.Resources {
	prio := func(e xds.Endpoint) xds.Priority {
		return xds.Priority{Localities: []xds.Locality{{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{e}}}}
	}
	return xdsResources(xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin},
		xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{
			prio(ssaEndpoint("b1/ipv6", "b1/ipv4")), prio(e2)}})
}

// ssaSessions are the RPCs of xdsSessionAddressLists that complete, and the
// address list each should report back: c1 and o1 picked by the child, the
// others by the override.
var ssaSessions = []struct {
	id   string
	want []scenario.Addr
}{
	{"c1", []scenario.Addr{"b1/ipv4", "b1/ipv6"}},
	{"s1", []scenario.Addr{"b2/ipv6", "b2/ipv4"}},
	{"s2", []scenario.Addr{"b2/ipv6", "b2/ipv4"}},
	{"i1", []scenario.Addr{"b2/ipv6", "b2/ipv4"}},
	{"s3", []scenario.Addr{"b2/ipv4"}},
	{"o1", []scenario.Addr{"b1/ipv4", "b1/ipv6"}},
}

// xdsSessionAddressLists: session affinity with endpoints of two addresses
// (A61, Changes to Stateful Session Affinity). eds1 (round_robin) has
// [b1/ipv6, b1/ipv4] in priority 0, b1/ipv6 refusing (so the child uses
// b1/ipv4), and [b2/ipv6, b2/ipv4] in priority 1, which the priority policy
// never starts: only a cookie reaches b2, on subchannels xds_override_host
// makes for it (A75's tree, the one conform builds). b2/ipv4 drops SYNs
// until 3 s.
//
//	1 s    c1: a session without a cookie: the child picks b1/ipv4
//	1.1 s  s1 cookie [b2/ipv6, b2/ipv4]
//	1.2 s  s2 cookie [b2/ipv4, b2/ipv6]: b2/ipv6 READY, b2/ipv4 has no subchannel
//	1.3 s  k1 cookie [b2/ipv4], 0.5 s deadline: b2/ipv4's subchannel hangs CONNECTING
//	2 s    b2/ipv6 goes down (its connection closes: IDLE), and is back at 2.2 s
//	2.5 s  i1 cookie [b2/ipv4, b2/ipv6]: b2/ipv4 CONNECTING, b2/ipv6 IDLE
//	3 s    b2/ipv4 stops dropping (connects at a SYN retransmission, ~4.3 s)
//	5 s    b2/ipv6 leaves the endpoint: b2 is [b2/ipv4]
//	5.5 s  s3 cookie [b2/ipv6, b2/ipv4], the list s1 reported
//	5.6 s  o1 cookie [b2/ipv6], a single-address cookie naming the removed address
func xdsSessionAddressLists() spec.Spec {
	at := func(name string, index int, fam scenario.Family) string { return runner.AddrOf(name, index, fam) }
	b2v6, b2v4 := at("b2", 1, scenario.IPv6), at("b2", 1, scenario.IPv4)
	b := scenario.New("xds-session-address-lists").
		Describe("eds1 (round_robin): p0 = [b1/ipv6 + b1/ipv4] (b1/ipv6 refuses), p1 = [b2/ipv6 + b2/ipv4] (b2/ipv4 drops until 3 s); "+
			"sessions: none yet, [b2/ipv6, b2/ipv4], [b2/ipv4, b2/ipv6], [b2/ipv4] (0.5 s); b2/ipv6 down 2-2.2 s; "+
			"[b2/ipv4, b2/ipv6] at 2.5 s; at 5 s b2 is [b2/ipv4]; [b2/ipv6, b2/ipv4], [b2/ipv6]").
		Backend("b1", scenario.Dual).
		Backend("b2", scenario.Dual).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.Fault("b1/ipv6", scenario.Reset)).
		At(0, scenario.Fault("b2/ipv4", scenario.Drop)).
		At(0, scenario.ServeXDS(ssaResources(ssaEndpoint("b2/ipv6", "b2/ipv4"))))
	ssaRPC(b, time.Second, "c1", session.WithoutCookie())
	ssaRPC(b, 1100*time.Millisecond, "s1", session.Cookie(b2v6, b2v4))
	ssaRPC(b, 1200*time.Millisecond, "s2", session.Cookie(b2v4, b2v6))
	ssaRPC(b, 1300*time.Millisecond, "k1", session.Cookie(b2v4), scenario.Deadline(500*time.Millisecond))
	b.At(2*time.Second, scenario.Fault("b2/ipv6", scenario.Down))
	b.At(2200*time.Millisecond, scenario.Clear("b2/ipv6"))
	ssaRPC(b, 2500*time.Millisecond, "i1", session.Cookie(b2v4, b2v6))
	b.At(3*time.Second, scenario.Clear("b2/ipv4"))
	b.At(5*time.Second, scenario.ServeXDS(ssaResources(ssaEndpoint("b2/ipv4"))))
	ssaRPC(b, 5500*time.Millisecond, "s3", session.Cookie(b2v6, b2v4))
	ssaRPC(b, 5600*time.Millisecond, "o1", session.Cookie(b2v6))
	s := b.FinishAfterEveryRPC().
		End(8 * time.Second).
		MustBuild()

	return spec.Spec{
		Doc: requirement.A61, Section: sectionSSA,
		Labels:    []string{spec.LabelXDS, spec.LabelIPv6},
		Scenario:  s,
		Agreement: spec.XDSAgreement(s, labSlack),
		Checks: []spec.Check{
			{Requirement: "A61-SSA-COOKIE-ADDRESS-LIST", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, id := range []string{"s1", "s2", "i1"} {
					g.Expect(spec.ServedBy(g, tr, id)).To(gomega.Equal("b2"),
						"%s's cookie lists b2's two addresses, comma-separated: it should reach b2, which only a session reaches", id)
				}
			}},
			{Requirement: "A61-SSA-COOKIE-ADDRESS-LIST", Needs: ssaPolicy, Assert: expectWholeEndpointReported},
			{Requirement: "A61-SSA-COOKIE-USED-FIRST", Needs: ssaPolicy, Assert: expectUsedFirst},
			{Requirement: "A61-SSA-REPORTS-ACTUAL-LIST", Needs: ssaPolicy, Assert: expectActualListReported},
			{Requirement: "A61-SSA-SURVIVES-ADDRESS-REMOVAL", Needs: resolverOutput, Assert: expectAddressRemoved},
			{Requirement: "A61-SSA-SURVIVES-ADDRESS-REMOVAL", Assert: expectSurvivesRemoval},
			{Requirement: "A61-SSA-SURVIVES-ADDRESS-REMOVAL", Needs: ssaPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				p := completedPick(g, tr, "s3")
				g.Expect(p.Addr).To(gomega.Equal(spec.Addr(tr, "b2/ipv4")), "s3 reaches b2 through the cookie's other address, b2/ipv4")
			}},
			{Requirement: "A61-SSA-PICK-ORDER", Assert: expectPickOrder},
			{Requirement: "A61-SSA-PICK-ORDER", Needs: ssaPolicy, Assert: expectIdleBeforeConnecting},
		},
	}
}

// ssaRPC sends RPC id at t, wait_for_ready with a deadline of 5 s unless
// opts say otherwise.
func ssaRPC(b *scenario.Builder, t time.Duration, id string, opts ...scenario.RPCOption) {
	b.At(t, scenario.RPC(id, append([]scenario.RPCOption{scenario.WaitForReady(), scenario.Deadline(5 * time.Second)}, opts...)...))
}

// expectWholeEndpointReported: every completed session pick reports all
// the addresses of the picked address's endpoint, as it stood then.
func expectWholeEndpointReported(g gomega.Gomega, tr *trace.Trace) {
	for _, c := range ssaSessions {
		p := completedPick(g, tr, c.id)
		g.Expect(p.SessionAddrs).To(gomega.ConsistOf(addrs(tr, c.want...)),
			"%s's pick of %s should report every address of its endpoint for the cookie", c.id, p.Addr)
	}
}

// expectUsedFirst: every completed session pick reports the address it
// used first: c1 and o1 used b1/ipv4 (the endpoint lists b1/ipv6 first), s2
// and i1 b2/ipv6 (their cookies list b2/ipv4 first).
func expectUsedFirst(g gomega.Gomega, tr *trace.Trace) {
	for _, c := range ssaSessions {
		p := completedPick(g, tr, c.id)
		g.Expect(p.SessionAddrs).NotTo(gomega.BeEmpty(), "%s's pick should report an address list:\n%s", c.id, p.String())
		g.Expect(p.SessionAddrs[0]).To(gomega.Equal(p.Addr), "%s used %s: the reported list should start with it:\n%s", c.id, p.Addr, p.String())
	}
}

// expectActualListReported: each completed session pick, by the override
// (s1, s2, i1, s3) or by the child (c1, o1), reports the chosen address's
// endpoint address list, used address first; s3's is b2's list after
// b2/ipv6 left it.
func expectActualListReported(g gomega.Gomega, tr *trace.Trace) {
	for _, c := range ssaSessions {
		p := completedPick(g, tr, c.id)
		g.Expect(p.SessionAddrs).To(gomega.Equal(addrs(tr, c.want...)), "%s's pick should report its endpoint's list:\n%s", c.id, p.String())
	}
}

// expectAddressRemoved: the update at 5 s reaches the channel with b2's
// endpoint [b2/ipv4], b2/ipv6 gone (the resolver's output, which only the
// reference shows).
func expectAddressRemoved(g gomega.Gomega, tr *trace.Trace) {
	v6, v4 := spec.Addr(tr, "b2/ipv6"), spec.Addr(tr, "b2/ipv4")
	us := trace.Select(updates(tr), func(e trace.Event) bool { return e.T >= 5*time.Second })
	g.Expect(us).NotTo(gomega.BeEmpty(), "the update removing b2/ipv6 should reach the channel")
	g.Expect(us[0].Endpoints).To(gomega.ContainElement([]string{v4}), "b2's endpoint is [b2/ipv4] from 5 s")
	g.Expect(us[0].Endpoints).NotTo(gomega.ContainElement(gomega.ContainElement(v6)), "b2/ipv6 is gone")
}

// expectSurvivesRemoval: after b2/ipv6 left b2's endpoint, a cookie
// listing b2/ipv6 and b2/ipv4 still reaches b2 (through b2/ipv4), while a
// cookie naming b2/ipv6 alone goes to the child (b1).
func expectSurvivesRemoval(g gomega.Gomega, tr *trace.Trace) {
	g.Expect(spec.ServedBy(g, tr, "s3")).To(gomega.Equal("b2"), "the cookie [b2/ipv6, b2/ipv4] should keep the session on b2")
	g.Expect(spec.ServedBy(g, tr, "o1")).To(gomega.Equal("b1"), "a cookie naming only the removed address has nothing to follow: the child (b1)")
}

// expectPickOrder, from outside: s2 reaches b2 (the READY address later in
// its cookie, not the earlier one without a subchannel); i1 reaches b2
// before b2/ipv4 could connect (its IDLE b2/ipv6 is connected, not its
// CONNECTING b2/ipv4 waited on); o1, naming no address in the map, goes to
// the child.
func expectPickOrder(g gomega.Gomega, tr *trace.Trace) {
	g.Expect(spec.ServedBy(g, tr, "s2")).To(gomega.Equal("b2"))
	g.Expect(spec.ServedBy(g, tr, "i1")).To(gomega.Equal("b2"))
	clear := trace.Select(tr.Events, trace.OfKind(trace.KindFaultClear), func(e trace.Event) bool { return e.Addr == spec.Addr(tr, "b2/ipv4") })
	g.Expect(clear).NotTo(gomega.BeEmpty())
	g.Expect(spec.RPCResult(g, tr, "i1").T).To(gomega.BeNumerically("<", clear[0].T),
		"i1 should be served through b2/ipv6 (IDLE, connected by the pick) before b2/ipv4 (CONNECTING, dropped until %s) could be", trace.FormatT(clear[0].T))
	g.Expect(spec.ServedBy(g, tr, "o1")).To(gomega.Equal("b1"))
}

// expectIdleBeforeConnecting: s2 is picked at once on b2/ipv6's READY
// subchannel; i1 finds b2/ipv4 CONNECTING and b2/ipv6 IDLE: its pick
// queues and asks b2/ipv6's subchannel to connect, and i1 goes there.
func expectIdleBeforeConnecting(g gomega.Gomega, tr *trace.Trace) {
	v6 := spec.SubchannelEvents(tr, spec.Addr(tr, "b2/ipv6"), trace.KindSubchannelNew)
	v4 := spec.SubchannelEvents(tr, spec.Addr(tr, "b2/ipv4"), trace.KindSubchannelNew)
	g.Expect(v6).To(gomega.HaveLen(1), "one subchannel for b2/ipv6:%s", spec.Render(v6))
	g.Expect(v4).To(gomega.HaveLen(1), "one subchannel for b2/ipv4:%s", spec.Render(v4))
	s2 := spec.PicksOf(tr, "s2")
	g.Expect(s2).To(gomega.HaveLen(1), "s2 is picked at once:%s", spec.Render(s2))
	g.Expect(s2[0].Subchannel).To(gomega.Equal(v6[0].Subchannel), "s2 goes to b2/ipv6's READY subchannel, second in its cookie")
	i1 := spec.RPCStart(g, tr, "i1")
	g.Expect(spec.SubchannelStateBefore(tr, v6[0].Subchannel, i1)).To(gomega.Equal("IDLE"), "b2/ipv6's subchannel is IDLE when i1 is sent")
	g.Expect(spec.SubchannelStateBefore(tr, v4[0].Subchannel, i1)).To(gomega.Equal("CONNECTING"), "b2/ipv4's subchannel is CONNECTING when i1 is sent")
	conn := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelConnect), func(e trace.Event) bool {
		return e.Subchannel == v6[0].Subchannel && e.T >= i1
	})
	g.Expect(conn).NotTo(gomega.BeEmpty(), "i1's pick should ask b2/ipv6's IDLE subchannel to connect")
	spec.RequireSteadyMachine(tr, i1, conn[0].T, "connection asked by i1's pick")
	g.Expect(conn[0].T-i1).To(gomega.BeNumerically("<=", spec.Within(tr, labSlack)), "at once")
	p := spec.PicksOf(tr, "i1")
	g.Expect(len(p)).To(gomega.BeNumerically(">=", 2), "i1 queued, then picked:%s", spec.Render(p))
	g.Expect(p[0].Detail).To(gomega.Equal("queued"), "i1's first pick queues:%s", spec.Render(p))
	g.Expect(p[len(p)-1].Subchannel).To(gomega.Equal(v6[0].Subchannel), "i1 goes to b2/ipv6:%s", spec.Render(p))
}

// completedPick is the pick that carried RPC id: its last, on an address.
func completedPick(g gomega.Gomega, tr *trace.Trace, id string) trace.Event {
	p := spec.PicksOf(tr, id)
	g.ExpectWithOffset(1, p).NotTo(gomega.BeEmpty(), "RPC %s should be picked", id)
	last := p[len(p)-1]
	g.ExpectWithOffset(1, last.Addr).NotTo(gomega.BeEmpty(), "RPC %s's last pick should carry it:%s", id, spec.Render(p))
	return last
}
