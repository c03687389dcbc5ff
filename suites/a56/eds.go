package a56

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// Priority through xDS: every real client runs priority as the xDS resolver
// builds it, one child per EDS priority of a cluster (A37; A56 is the
// policy it uses). The specs of this file give a third party its priorities
// that way and judge it from outside: which backend each attempt went to
// and when (the capture), who answered each RPC, and whether the client
// closed a connection (the backends' conn-close). The reference runs the
// same scenarios through its own xDS client, in both modes; the checks
// that read the backends' evidence need the lab.

// edsCluster is the one cluster of the EDS specs: round_robin, which
// connects to every endpoint of a child as soon as the child exists, so a
// child's creation shows as attempts to its endpoints.
const edsCluster = "eds1"

// edsPriorities is edsCluster's load assignment: priority i holds the
// endpoints of prios[i] in one locality of its own ("l<i>"), so a client
// that names priority children by their localities keeps each child's name
// when another priority comes or goes.
func edsPriorities(prios ...[]scenario.Addr) xds.LoadAssignment {
	la := xds.LoadAssignment{Cluster: edsCluster}
	for i, p := range prios {
		loc := xds.Locality{Name: fmt.Sprintf("l%d", i), Weight: 1}
		for _, a := range p {
			loc.Endpoints = append(loc.Endpoints, xds.Endpoint{Addr: a})
		}
		la.Priorities = append(la.Priorities, xds.Priority{Localities: []xds.Locality{loc}})
	}
	return la
}

// edsResources is the xDS state of the world of an EDS spec.
func edsResources(la xds.LoadAssignment) xds.Resources {
	return spec.XDSResources(edsCluster, []xds.Cluster{{Name: edsCluster, Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin}}, la)
}

// edsSlack is how far an EDS spec's lab time may stray where it judges a
// reaction "at once" (a priority passed over on TRANSIENT_FAILURE, a child's
// connections closed on its removal): the client's own work between two
// events, not a timer.
const edsSlack = 250 * time.Millisecond

// ---------------------------------------------------------------------------
// Failover.

// When edsFailover's backend b1 goes down, and how long r2 may wait.
const (
	edsDownAt = 3 * time.Second
	edsR2At   = 3500 * time.Millisecond
)

// edsFailover: eds1 has three priorities of one endpoint each: p0 = [b1],
// p1 = [b2], whose SYNs are dropped (so p1 stays CONNECTING), p2 = [b3].
// r1 at 1 s goes to p0. At 3 s b1 goes down: its connection closes and a
// new one is refused, so p0 reports TRANSIENT_FAILURE and priority moves to
// p1 at once, creating it; p1's failover timer, started then, fires 10 s
// later and priority creates p2, which serves r2 (sent at 3.5 s, wait for
// ready). A timer started when the config arrived, not when p1 was
// created, would bring p2 at about 10 s.
func edsFailover() spec.Spec {
	b := scenario.New("eds-priority-failover").
		Describe("eds1 (round_robin): p0 = [b1], p1 = [b2] (SYNs dropped), p2 = [b3]; r1 at 1 s; b1 down at 3 s; r2 (wait for ready) at 3.5 s").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.Fault("b2/ipv4", scenario.Drop)).
		At(0, scenario.ServeXDS(edsResources(edsPriorities(addrs("b1/ipv4"), addrs("b2/ipv4"), addrs("b3/ipv4")))))
	spec.SendRPCs(b, time.Second, []string{"r1"})
	b.At(edsDownAt, scenario.Stop("b1"))
	spec.SendRPCs(b, edsR2At, []string{"r2"}, scenario.Deadline(failoverTimeout+5*time.Second))
	s := b.FinishAfterEveryRPC().
		End(edsR2At + failoverTimeout + 6*time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Labels:   []string{spec.LabelSlow},
		Scenario: s,
		Checks: []spec.Check{
			{Requirement: "A56-ROUTE-HIGHEST-READY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b1"), "r1 should go to p0, the highest priority, READY")
			}},
			{Requirement: "A56-LAZY-CREATE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				down := backendDownAt(g, tr, "b1")
				for _, a := range []scenario.Addr{"b2/ipv4", "b3/ipv4"} {
					expectNone(g, between(freshSYNs(tr, a), 0, down),
						fmt.Sprintf("while p0 (b1) was usable no lower priority should exist, so nothing should connect to %s", a))
				}
			}},
			{Requirement: "A56-TF-FAILOVER-AT-ONCE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// p0 reports TRANSIENT_FAILURE no sooner than b1 going
				// down (its connection lost) and, if it tried b1 again
				// first, no later than that attempt's refusal.
				down := backendDownAt(g, tr, "b1")
				p1 := firstSYN(g, tr, "b2/ipv4").T
				failed := down
				if r := refusedAfter(tr, "b1/ipv4", down); r >= 0 && r <= p1 {
					failed = r
				}
				g.Expect(p1).To(gomega.And(gomega.BeNumerically(">=", down), gomega.BeNumerically("<=", failed+spec.Within(tr, edsSlack))),
					"p1 (b2) should be tried at once when p0 fails (b1 down at %v, p0 failed by %v), not after a failover timer: first tried at %v", down, failed, p1)
			}},
			{Requirement: "A56-FAILOVER-TIMER-10S", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				p1, p2 := firstSYN(g, tr, "b2/ipv4").T, firstSYN(g, tr, "b3/ipv4").T
				spec.RequireSteadyMachine(tr, p1, p2, "p1's 10 s failover timer")
				g.Expect(p2-p1).To(beAbout(failoverTimeout, spec.TimerWithin(tr)),
					"p1 (b2, first tried at %v) stays CONNECTING: p2 (b3) should be tried when p1's 10 s failover timer fires, not at %v", p1, p2)
				g.Expect(spec.ServedBy(g, tr, "r2")).To(gomega.Equal("b3"), "r2 should wait for p2")
			}},
			{Requirement: "A56-FAILOVER-TIMER-ON-CREATE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				p1, p2 := firstSYN(g, tr, "b2/ipv4").T, firstSYN(g, tr, "b3/ipv4").T
				g.Expect(p2-p1).To(gomega.BeNumerically(">=", failoverTimeout-spec.Within(tr, labSlack)),
					"p1's failover timer should start when p1 is created (first tried at %v), so p2 (b3) comes 10 s after it, not at %v", p1, p2)
			}},
			{Requirement: "A56-CHOOSE-PENDING-TIMER", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				p1 := firstSYN(g, tr, "b2/ipv4").T
				pending := p1 + failoverTimeout - spec.Within(tr, labSlack)
				expectNone(g, between(freshSYNs(tr, "b3/ipv4"), 0, pending), "while p1's failover timer runs, choosing should stop at p1 and leave p2 uncreated")
				g.Expect(spec.RPCResult(g, tr, "r2").T).To(gomega.BeNumerically(">=", pending), "r2 should wait on p1 while its failover timer runs")
			}},
		},
		Agreement: spec.XDSAgreement(s, labSlack),
	}
}

// When edsRepeatedConnecting's p0 loses its connection, and when EDS
// changes p0 while it is CONNECTING.
const (
	repeatLostAt   = time.Second
	repeatUpdateAt = repeatLostAt + 5*time.Second
)

// edsRepeatedConnecting: eds1 has p0 = [b1], p1 = [b2]. p0 is READY until 1
// s, when b1 goes down with its SYNs dropped: the connection is lost, p0
// reconnects and stays CONNECTING (IDLE or READY more recently than
// TRANSIENT_FAILURE: its failover timer starts). At 6 s EDS adds b3
// (SYNs dropped too) to p0, an update that may make p0 report CONNECTING
// again. The latest revision ignores a repeated CONNECTING: p1 is tried 10
// s after the loss, not 10 s after the update. (A client that does not
// report the repeat at all passes too: the rule forbids only the restart.)
func edsRepeatedConnecting() spec.Spec {
	b := scenario.New("eds-priority-repeated-connecting").
		Describe("eds1 (round_robin): p0 = [b1], p1 = [b2]; b1 down, its SYNs dropped, at 1 s; EDS adds b3 (SYNs dropped) to p0 at 6 s; r1 (wait for ready) at 1.5 s").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.Fault("b3/ipv4", scenario.Drop)).
		At(0, scenario.ServeXDS(edsResources(edsPriorities(addrs("b1/ipv4"), addrs("b2/ipv4"))))).
		At(repeatLostAt, scenario.Fault("b1/ipv4", scenario.Drop)).
		At(repeatLostAt, scenario.Stop("b1")).
		At(repeatLostAt+500*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(failoverTimeout+5*time.Second))).
		At(repeatUpdateAt, scenario.ServeXDS(edsResources(edsPriorities(addrs("b1/ipv4", "b3/ipv4"), addrs("b2/ipv4"))))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(repeatUpdateAt + failoverTimeout + 3*time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A56, Section: sectionTracking,
		Labels:   []string{spec.LabelSlow},
		Scenario: b,
		Checks: []spec.Check{
			{Requirement: "A56-FAILOVER-TIMER-NEW-CONNECTING", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// p0 goes CONNECTING when it reconnects to b1 after the loss:
				// its first attempt then, which must hang (no refusal).
				again := between(freshSYNs(tr, "b1/ipv4"), repeatLostAt-spec.Within(tr, labSlack), time.Hour)
				verdict.Require(len(again) > 0, "p0 never reconnected to b1 after losing its connection: it never went CONNECTING")
				lost := again[0].T
				verdict.Require(refusedAfter(tr, "b1/ipv4", lost) < 0, "an attempt to b1 after the loss was refused: p0 failed rather than stayed CONNECTING")
				verdict.Require(len(between(freshSYNs(tr, "b3/ipv4"), 0, lost+failoverTimeout)) > 0,
					"p0 never received the update (no attempt to b3 before its failover timer would fire): nothing could repeat CONNECTING")
				p1 := firstSYN(g, tr, "b2/ipv4").T
				g.Expect(p1-lost).To(beAbout(failoverTimeout, spec.Within(tr, labSlack)),
					"p0's failover timer started when it went CONNECTING again (%v); the update at %v, a repeated CONNECTING, should not restart it: p1 (b2) should be tried 10 s after, not at %v", lost, repeatUpdateAt, p1)
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b2"))
			}},
		},
		Agreement: spec.XDSAgreement(b, labSlack),
	}
}

// backendDownAt is when the scenario took backend name down: the lab
// records the backend going down, the simulator each of its addresses.
func backendDownAt(g gomega.Gomega, tr *trace.Trace, name string) time.Duration {
	prefix := scenario.Addr(name + "/")
	for _, e := range spec.Of(tr, trace.KindBackendDown, trace.KindFaultSet) {
		if e.Kind == trace.KindBackendDown && e.Backend == name {
			return e.T
		}
		if e.Kind == trace.KindFaultSet && e.Fault == string(scenario.Down) && e.Addr == spec.Addr(tr, prefix+"ipv4") {
			return e.T
		}
	}
	g.ExpectWithOffset(1, false).To(gomega.BeTrue(), "backend %s was never taken down", name)
	return 0
}

// refusedAfter is when an attempt to a was first refused at or after t, -1
// if none was.
func refusedAfter(tr *trace.Trace, a scenario.Addr, t time.Duration) time.Duration {
	for _, at := range spec.Refusals(tr, spec.Addr(tr, a)) {
		if at >= t {
			return at
		}
	}
	return -1
}

// ---------------------------------------------------------------------------
// Return to a higher priority, and a priority removed.

// edsReturnScenario: eds1 has p0 = [b1], refusing at first, and p1 = [b2].
// p0 fails at once, so p1 serves r1. b1's fault is cleared at 1.5 s; when
// p0 connects again (its backoff decides when) priority returns to it and
// deactivates p1, keeping its connection: r2, 300 ms after b1 answers, goes
// to p0. A second later b1 goes down: p0 fails, priority reactivates p1,
// and r3 goes over p1's old connection. Then EDS drops p1 while it is in
// use. env is the client's environment (the child policy cache switch).
func edsReturnScenario(name string, env map[string]string) *scenario.Scenario {
	recovered := scenario.On("syn-ack").WithAddr("b1/ipv4")
	rpc := func(id string) scenario.Action {
		return scenario.RPC(id, scenario.WaitForReady(), scenario.Deadline(5*time.Second))
	}
	b := scenario.New(name).
		Describe("eds1 (round_robin): p0 = [b1] (refusing until 1.5 s), p1 = [b2]; r1 at 1 s; after b1 first answers: "+
			"r2 at 300 ms, b1 down at 1 s, r3 at 1.5 s, p1 dropped from EDS at 2 s, the end at 3 s").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.ServeXDS(edsResources(edsPriorities(addrs("b1/ipv4"), addrs("b2/ipv4")))))
	for k, v := range env {
		b.Env(k, v)
	}
	spec.SendRPCs(b, time.Second, []string{"r1"})
	b.At(1500*time.Millisecond, scenario.Clear("b1/ipv4")).
		AfterDelay(recovered, 300*time.Millisecond, rpc("r2")).
		AfterDelay(recovered, time.Second, scenario.Stop("b1")).
		AfterDelay(recovered, 1500*time.Millisecond, rpc("r3")).
		AfterDelay(recovered, 2*time.Second, scenario.ServeXDS(edsResources(edsPriorities(addrs("b1/ipv4"))))).
		AfterDelay(recovered, edsFinishDelay, scenario.Finish())
	return b.End(20 * time.Second).MustBuild()
}

// edsFinishDelay is when edsReturnScenario finishes, after b1 first
// answers: the client's channel closes then, and its connections with it.
const edsFinishDelay = 3 * time.Second

// edsReturnAndRemove: edsReturnScenario with no switch set. p1 is kept
// while deactivated and reactivated with its connection; dropped from the
// config, it is destroyed at once (A115, the latest revision, for Go and
// Java).
func edsReturnAndRemove() spec.Spec {
	s := edsReturnScenario("eds-priority-return-and-remove", nil)
	return spec.Spec{
		Doc: requirement.A56, Section: sectionLifetime,
		Scenario: s,
		Checks: []spec.Check{
			{Requirement: "A56-ROUTE-HIGHEST-READY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b2"), "r1 should go to p1 while p0 refuses")
				g.Expect(spec.ServedBy(g, tr, "r2")).To(gomega.Equal("b1"), "r2 should go back to p0 once it is READY again")
			}},
			{Requirement: "A56-DEACTIVATE-ON-HIGHER", Needs: backends, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				requireReturned(g, tr)
				expectKept(g, tr, "b2/ipv4", recoveredAt(g, tr), removedAt(g, tr),
					"p1, below READY p0, should be deactivated and keep its connection to b2, not be destroyed")
			}},
			{Requirement: "A56-REACTIVATE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				requireReturned(g, tr)
				g.Expect(spec.ServedBy(g, tr, "r3")).To(gomega.Equal("b2"), "r3, with p0 down, should go to p1 again")
				expectNone(g, between(freshSYNs(tr, "b2/ipv4"), recoveredAt(g, tr), spec.RPCResult(g, tr, "r3").T),
					"p1, deactivated when p0 came back and used again when it failed, should be reactivated with its connection to b2, not made anew")
			}},
			{Requirement: "A56-REMOVED-CHILD-DESTROYED", Needs: backends, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				requireInUse(g, tr)
				at := removedAt(g, tr)
				closes := closesOf(tr, "b2/ipv4", at, endOf(g, tr))
				if len(closes) == 0 {
					verdict.NoSign("p1 was dropped from EDS at %v and its connection to b2 was never closed: the child was kept, not destroyed", at)
				}
				spec.RequireSteadyMachine(tr, at, closes[0].T, "close of p1's connection once p1 is dropped")
				g.Expect(closes[0].T-at).To(gomega.BeNumerically("<=", edsSlack),
					"p1, dropped from EDS at %v, should be destroyed at once; its connection to b2 closed at %v", at, closes[0].T)
			}},
		},
		Agreement: edsReturnAgreement(s),
	}
}

// edsReturnAgreement is how the simulator and the lab agree on
// edsReturnScenario: up to b1's fault being cleared. What follows waits on
// p0's reconnection, after a backoff each mode draws its own way.
func edsReturnAgreement(s *scenario.Scenario) *compare.Options {
	return spec.XDSAgreementUntil(s, labSlack, 1500*time.Millisecond)
}

// edsReturnAndRemoveCached: edsReturnScenario with A115's switch set, which
// brings the child policy cache back in Go and Java: p1, dropped from the
// config, is kept (deactivated) and its connection with it — as C-core and
// the other implementations keep it anyway (the seed's rule).
func edsReturnAndRemoveCached() spec.Spec {
	s := edsReturnScenario("eds-priority-removed-cached", map[string]string{scenario.EnvPriorityChildPolicyCache: "true"})
	kept := func(g gomega.Gomega, tr *trace.Trace) {
		requireInUse(g, tr)
		expectKept(g, tr, "b2/ipv4", removedAt(g, tr), endOf(g, tr),
			"p1, dropped from EDS, should be deactivated and kept (its connection to b2 open), not destroyed")
	}
	return spec.Spec{
		Doc: requirement.A56, Section: sectionLifetime,
		Scenario: s,
		Checks: []spec.Check{
			{Requirement: "A56-CHILD-CACHE-ENV-REVERT", Needs: backends, Assert: kept},
			{Requirement: "A56-REMOVED-CHILD-RETAINED", Needs: backends, Assert: kept},
		},
		Agreement: edsReturnAgreement(s),
	}
}

// requireReturned states that priority returned to p0 once it connected
// again: r2 went to b1.
func requireReturned(g gomega.Gomega, tr *trace.Trace) {
	verdict.Require(spec.ServedBy(g, tr, "r2") == "b1", "priority never returned to p0 (r2 was not served by b1)")
}

// requireInUse states that p1 was in use when EDS dropped it: r3 went to b2.
func requireInUse(g gomega.Gomega, tr *trace.Trace) {
	verdict.Require(spec.ServedBy(g, tr, "r3") == "b2", "p1 was not in use when EDS dropped it (r3 was not served by b2)")
}

// endOf is when edsReturnScenario finished, as it was scheduled: the
// client closes its channel then (a driver that polls its channel's state
// may never report SHUTDOWN).
func endOf(g gomega.Gomega, tr *trace.Trace) time.Duration {
	return recoveredAt(g, tr) + edsFinishDelay
}

// backends is the Needs of a check that reads the backends' evidence (a
// client's closes): the lab records it for every implementation, the
// simulator not at all.
var backends = []trace.Source{trace.SourceBackend}

// recoveredAt is when b1 first answered a SYN (p0 connecting again).
func recoveredAt(g gomega.Gomega, tr *trace.Trace) time.Duration {
	b1 := spec.Addr(tr, "b1/ipv4")
	for _, e := range spec.Of(tr, trace.KindSYNACK) {
		if e.Addr == b1 {
			return e.T
		}
	}
	g.ExpectWithOffset(1, false).To(gomega.BeTrue(), "b1 never answered a SYN: p0 never connected")
	return 0
}

// removedAt is when the xDS server began serving EDS without p1 (its
// second version): the client may act on it before it ACKs it.
func removedAt(g gomega.Gomega, tr *trace.Trace) time.Duration {
	at, ok := spec.XDSServedAt(tr, "2")
	g.ExpectWithOffset(1, ok).To(gomega.BeTrue(), "EDS without p1 (version 2) was never served")
	return at
}

// closesOf are the closes, by the client, of its connections to a in
// [from, to).
func closesOf(tr *trace.Trace, a scenario.Addr, from, to time.Duration) []trace.Event {
	addr := spec.Addr(tr, a)
	return between(trace.Select(spec.Of(tr, trace.KindConnClose), func(e trace.Event) bool { return e.Addr == addr }), from, to)
}

// expectKept checks that the client closed no connection to a in
// [from, to).
func expectKept(g gomega.Gomega, tr *trace.Trace, a scenario.Addr, from, to time.Duration, why string) {
	expectNone(g, closesOf(tr, a, from, to), why)
}

// addrs is a list of symbolic addresses, for edsPriorities.
func addrs(as ...scenario.Addr) []scenario.Addr { return as }

// ---------------------------------------------------------------------------
// Re-resolution requests from an EDS priority.

// The times of edsIgnoreReresolution: a resolver may wait this long between
// two resolutions of a name (grpc-go's, grpc-js's and C-core's DNS
// resolvers wait 30 s by default), so a request made at any time is seen as
// a query by then; the run ends a margin after it.
const (
	dnsMinInterval = 30 * time.Second
	ignoreRunEnd   = dnsMinInterval + 4*time.Second
)

// edsIgnoreReresolution: an aggregate over eds1 (b1, refusing) and dns1, a
// LOGICAL_DNS cluster whose name resolves to b2. eds1's children keep
// failing and keep asking for re-resolution; priority drops their requests
// (A37: ignore_reresolution_requests is set for every priority that comes
// from an EDS cluster; A56 passes on only the other children's), so the
// LOGICAL_DNS name is never resolved again while dns1 itself is READY. A
// request that got through would show as a new DNS query for the name
// within 30 s (the resolvers' minimum interval). One RPC at the end checks
// dns1 still serves.
func edsIgnoreReresolution() spec.Spec {
	s := scenario.New("eds-ignore-reresolution").
		Describe("aggregate over eds1 (b1, refusing) then dns1 (LOGICAL_DNS dns1.conform: b2); r1 at 33 s; the end at 34 s").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.Resolve(scenario.EP("b2/ipv4"))).
		At(0, scenario.ServeXDS(spec.XDSResources("agg", []xds.Cluster{
			{Name: "agg", Type: xds.ClusterAggregate, Clusters: []string{edsCluster, "dns1"}},
			{Name: edsCluster, Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin},
			{Name: "dns1", Type: xds.ClusterLogicalDNS, DNSHost: ignoreDNSHost},
		}, edsPriorities(addrs("b1/ipv4"))))).
		At(ignoreRunEnd-time.Second, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(ignoreRunEnd).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A56, Section: sectionConfig,
		Labels:   []string{spec.LabelSlow},
		Scenario: s,
		Checks: []spec.Check{
			{Requirement: "A56-IGNORE-RERESOLUTION", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				qs := dnsQueriesFor(tr, ignoreDNSHost)
				verdict.Require(len(qs) > 0, "the client never resolved %s: dns1 was not resolved through the lab's DNS", ignoreDNSHost)
				first := qs[0].T
				refused := trace.Select(spec.Of(tr, trace.KindRST), func(e trace.Event) bool {
					return e.Addr == spec.Addr(tr, "b1/ipv4") && e.T > first
				})
				verdict.Require(len(refused) >= 2, "eds1 failed %d times after dns1 was resolved: it had no reason to ask for re-resolution", len(refused))
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b2"), "r1 should go to dns1 (b2) while eds1 refuses")
				again := trace.Select(qs, func(e trace.Event) bool { return e.T > first+spec.DNSQueryBurst })
				expectNone(g, again, fmt.Sprintf("only eds1's connections failed, and dns1 was READY: a re-resolution caused by the EDS cluster's failures "+
					"got through to the LOGICAL_DNS cluster, the churn A37 sets ignore_reresolution_requests on EDS priorities to prevent (%s resolved again)", ignoreDNSHost))
			}},
		},
	}
}

// ignoreDNSHost is the LOGICAL_DNS name of edsIgnoreReresolution.
const ignoreDNSHost = "dns1.conform"

// dnsQueriesFor are the lab DNS's queries for name (any type).
func dnsQueriesFor(tr *trace.Trace, name string) []trace.Event {
	return trace.Select(spec.Of(tr, trace.KindDNSQuery), func(e trace.Event) bool {
		f := strings.Fields(e.Detail)
		return len(f) >= 2 && strings.TrimSuffix(f[1], ".") == name
	})
}
