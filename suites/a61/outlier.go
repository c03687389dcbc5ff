package a61

import (
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// sectionOD is A61's outlier detection section, as the catalogue spells it.
const sectionOD = "Outlier Detection"

// The outlier_detection of every spec here (odCluster): failure
// percentage ejection (threshold 50, enforcement 100, minimum_hosts 2,
// request_volume odVolume), a sweep every odInterval from the config, an
// ejection lasting odBase (less than an interval, so the second sweep
// un-ejects what the first ejected), max_ejection_percent 50.
const (
	odInterval = time.Second
	odBase     = 500 * time.Millisecond
	odVolume   = 6
)

// The failures are made by the backends: fail_rpcs on an address makes
// every RPC there fail after the pick (UNAVAILABLE), which outlier
// detection counts, in the lab as in the simulator. RPCs go one every 10 ms
// (spec.SendRPCs), so round_robin gives each of two READY endpoints every
// other one; the checks count where each went (spec.Answers) rather than
// trust that, and state the counts they need as preconditions. Every step
// after w1 is timed from the client's first EDS ACK (spec.ODCounting), and
// so are the sweeps the checks place (spec.RequireInODInterval): the times
// below count from that ACK, so the groups of RPCs sit well inside their
// intervals however long the client takes to start, and a check of a run
// where one does not is inconclusive.

// xdsODPerEndpoint: eds1 (round_robin, odCluster) with e1 = b1/ipv4 and
// additional_addresses [b2/ipv4], e2 = b3/ipv4; b1 and b2 fail every RPC
// from 0.2 s. Eight RPCs at 0.3 s: four fail on b1, four reach b3. b1 goes
// down at 0.45 s, so e1's pick_first reconnects over b2. Eight RPCs at
// 0.55 s: four fail on b2, four reach b3. A61 (Outlier Detection): RPCs on
// any address of an endpoint count for the endpoint, so e1 has 8 requests,
// all failed, at the first sweep (b1 and b2 alone have 4 each, below
// request_volume 6) and is ejected: RPCs at 1.4 s all reach b3 (counted
// per address, nothing would be ejected and half of them would reach b2).
// b2's fault is cleared at 1.3 s; the second sweep un-ejects e1 and RPCs
// at 2.4 s reach b2 again, over the connection e1 kept while ejected (A61:
// ejection is a health signal).
func xdsODPerEndpoint() spec.Spec {
	la := oneLocality("eds1",
		xds.Endpoint{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}},
		xds.Endpoint{Addr: "b3/ipv4"})
	onB1, onB2, ejected, back := spec.RPCIDs("a", 8), spec.RPCIDs("c", 8), spec.RPCIDs("n", 4), spec.RPCIDs("m", 4)
	b := odScenario("xds-od-per-endpoint", la).
		Describe("eds1 (round_robin; outlier_detection failure_percentage 50 %, request_volume 6, minimum_hosts 2, interval 1 s, "+
			"base_ejection_time 0.5 s): e1 = b1/ipv4 + additional [b2/ipv4], e2 = b3/ipv4; times from the first EDS ACK: "+
			"b1 and b2 fail RPCs from 0.2 s; 8 RPCs at 0.3 s; b1 down at 0.45 s (e1 reconnects over b2); 8 RPCs at 0.55 s; b2's fault cleared at 1.3 s; "+
			"RPCs at 1.4 s and 2.4 s").
		AfterDelay(spec.ODCounting, 200*time.Millisecond, scenario.Fault("b1/ipv4", scenario.FailRPCs)).
		AfterDelay(spec.ODCounting, 200*time.Millisecond, scenario.Fault("b2/ipv4", scenario.FailRPCs))
	spec.SendRPCsAfter(b, spec.ODCounting, 300*time.Millisecond, onB1)
	b.AfterDelay(spec.ODCounting, 450*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Down))
	spec.SendRPCsAfter(b, spec.ODCounting, 550*time.Millisecond, onB2)
	b.AfterDelay(spec.ODCounting, 1300*time.Millisecond, scenario.Clear("b2/ipv4"))
	spec.SendRPCsAfter(b, spec.ODCounting, 1400*time.Millisecond, ejected)
	spec.SendRPCsAfter(b, spec.ODCounting, 2400*time.Millisecond, back)
	s := b.FinishAfterEveryRPC().End(6 * time.Second).MustBuild()
	counted := slices.Concat([]string{"w1"}, onB1, onB2)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionOD,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Agreement: spec.ODAgreement(s, ejected...),
		Checks: []spec.Check{
			{Requirement: "A61-OD-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				e1 := []string{spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4")}
				t := spec.TallyAnswers(spec.Answers(tr, counted...))
				verdict.Require(t[e1[0]].Failed > 0 && t[e1[1]].Failed > 0,
					"e1's failures should be on both its addresses, b1 and then b2 (after b1 went down):%s", spec.RenderAnswers(spec.Answers(tr, counted...)))
				requireOutlier(tr, counted, e1, spec.Addr(tr, "b3/ipv4"))
				verdict.Require(t[e1[0]].Total < odVolume && t[e1[1]].Total < odVolume,
					"each of e1's addresses alone should have fewer than %d requests, or counting per address would eject too:%s", odVolume, spec.RenderAnswers(spec.Answers(tr, counted...)))
				spec.RequireInODInterval(tr, odInterval, 1, ejected...)
				g.Expect(spec.ServedByEach(g, tr, ejected...)).To(gomega.HaveEach("b3"),
					"e1 failed every RPC on b1 and b2, together over request_volume: the first sweep should eject it, and the RPCs after it reach b3 alone:%s",
					spec.RenderAnswers(spec.Answers(tr, ejected...)))
			}},
			{Requirement: "A61-OD-EJECT-VIA-HEALTH", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				keptConnection(g, tr, onB2, back)
			}},
			{Requirement: "A61-OD-EJECT-VIA-HEALTH", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				keptSubchannel(g, tr, back)
			}},
		},
	}
}

// keptConnection judges from outside that e1 kept its connection to b2
// through its ejection (A61: ejection is signalled through the health
// watch, so pick_first keeps its connection): once un-ejected (the RPCs
// back, after the second sweep) e1 takes its share of RPCs again on b2,
// and no new connection to b2 was opened from e1's first RPC there (in
// onB2) to the last of them.
func keptConnection(g gomega.Gomega, tr *trace.Trace, onB2, back []string) {
	a2 := spec.Addr(tr, "b2/ipv4")
	first := spec.AnsweredBy(spec.Answers(tr, onB2...), a2)
	verdict.Require(len(first) > 0, "no RPC reached b2 before the ejection: e1 was not connected over b2:%s", spec.RenderAnswers(spec.Answers(tr, onB2...)))
	spec.RequireInODInterval(tr, odInterval, 2, back...)
	g.Expect(spec.ServedByEach(g, tr, back...)).To(gomega.ContainElement("b2"),
		"un-ejected at the second sweep, e1 should take its share of the RPCs again, on b2:%s", spec.RenderAnswers(spec.Answers(tr, back...)))
	from, _, _ := spec.RPCSpan(tr, first[0].RPC)
	_, to, _ := spec.RPCSpan(tr, back[len(back)-1])
	syns := trace.Select(spec.AttemptsTo(tr.Events, a2), func(e trace.Event) bool { return e.T > from && e.T <= to })
	g.Expect(syns).To(gomega.BeEmpty(),
		"e1's connection to b2 should outlive its ejection (a health signal, not a disconnection): no new connection to b2 from %s, its first RPC there, to %s:%s",
		first[0].RPC, back[len(back)-1], spec.Render(syns))
}

// keptSubchannel judges on the policy's events that b2's subchannel, READY
// before e1's ejection, stays READY through it (no state change until the
// last RPC of back) and carries e1's RPCs of back after it.
func keptSubchannel(g gomega.Gomega, tr *trace.Trace, back []string) {
	a2 := spec.Addr(tr, "b2/ipv4")
	news := spec.SubchannelEvents(tr, a2, trace.KindSubchannelNew)
	g.Expect(news).To(gomega.HaveLen(1), "pick_first keeps its one subchannel to b2 through the ejection:%s", spec.Render(news))
	sc := news[0].Subchannel
	_, end, _ := spec.RPCSpan(tr, back[len(back)-1])
	states := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState, trace.KindSubchannelShutdown), func(e trace.Event) bool {
		return e.Subchannel == sc && e.T <= end
	})
	i := slices.IndexFunc(states, func(e trace.Event) bool { return e.State == "READY" })
	g.Expect(i).To(gomega.BeNumerically(">=", 0), "b2's subchannel should become READY:%s", spec.Render(states))
	g.Expect(states[i+1:]).To(gomega.BeEmpty(), "b2's subchannel should stay READY while e1 is ejected (ejection is a health signal):%s", spec.Render(states))
	var picks []trace.Event
	for _, id := range back {
		picks = append(picks, trace.Select(spec.PicksOf(tr, id), func(e trace.Event) bool { return e.Addr == a2 })...)
	}
	g.Expect(picks).NotTo(gomega.BeEmpty(), "after the un-ejection e1 should be picked on b2")
	g.Expect(picks).To(gomega.HaveEach(gomega.HaveField("Subchannel", sc)), "after the un-ejection b2 is used over the kept subchannel")
}

// xdsODEjectAllAddresses: eds1 as in xdsODPerEndpoint, e1 = b1/ipv4 with
// additional_addresses [b2/ipv4], e2 = b3/ipv4. b1 fails every RPC from
// 0.2 s; sixteen RPCs at 0.3 s, half on b1, half on b3, so the first sweep
// ejects e1. At 1.2 s b1 goes down: e1's connection is lost, round_robin
// takes its pick_first out of IDLE, and it connects to b2, e1's other
// address, while e1 is ejected. A61 (Outlier Detection): ejection applies
// to the subchannels of every address of the endpoint, so b2's READY
// subchannel reports unhealthy too and RPCs at 1.5 s all reach b3
// (ejecting b1's address alone would hand them to b2 half the time). The
// second sweep un-ejects e1, again for every address: RPCs at 2.5 s reach
// b2 and b3.
func xdsODEjectAllAddresses() spec.Spec {
	la := oneLocality("eds1",
		xds.Endpoint{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}},
		xds.Endpoint{Addr: "b3/ipv4"})
	first, second, ejected, back := spec.RPCIDs("a", 8), spec.RPCIDs("d", 8), spec.RPCIDs("n", 4), spec.RPCIDs("m", 4)
	b := odScenario("xds-od-eject-all-addresses", la).
		Describe("eds1 (round_robin, outlier_detection as xds-od-per-endpoint): e1 = b1/ipv4 + additional [b2/ipv4], e2 = b3/ipv4; "+
			"times from the first EDS ACK: b1 fails RPCs from 0.2 s; 16 RPCs at 0.3 s (e1 ejected at the first sweep); b1 down at 1.2 s, so e1 reconnects over b2; "+
			"RPCs at 1.5 s and 2.5 s").
		AfterDelay(spec.ODCounting, 200*time.Millisecond, scenario.Fault("b1/ipv4", scenario.FailRPCs))
	spec.SendRPCsAfter(b, spec.ODCounting, 300*time.Millisecond, first)
	spec.SendRPCsAfter(b, spec.ODCounting, 380*time.Millisecond, second)
	b.AfterDelay(spec.ODCounting, 1200*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Down))
	spec.SendRPCsAfter(b, spec.ODCounting, 1500*time.Millisecond, ejected)
	spec.SendRPCsAfter(b, spec.ODCounting, 2500*time.Millisecond, back)
	s := b.FinishAfterEveryRPC().End(6 * time.Second).MustBuild()
	counted := slices.Concat([]string{"w1"}, first, second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionOD,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Agreement: spec.ODAgreement(s, ejected...),
		Checks: []spec.Check{
			{Requirement: "A61-OD-EJECT-ALL-ADDRESSES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				a2 := spec.Addr(tr, "b2/ipv4")
				requireOutlier(tr, counted, []string{spec.Addr(tr, "b1/ipv4"), a2}, spec.Addr(tr, "b3/ipv4"))
				spec.RequireInODInterval(tr, odInterval, 1, ejected...)
				n1, _, _ := spec.RPCSpan(tr, ejected[0])
				verdict.Require(len(trace.Select(spec.Of(tr, trace.KindSYNACK), func(e trace.Event) bool { return e.Addr == a2 && e.T < n1 })) > 0,
					"e1 should be connected over b2, after b1 went down, before the RPCs that judge its ejection")
				g.Expect(spec.ServedByEach(g, tr, ejected...)).To(gomega.HaveEach("b3"),
					"e1 is ejected: its new connection over b2 should be ejected with it, and the RPCs reach b3 alone:%s",
					spec.RenderAnswers(spec.Answers(tr, ejected...)))
				spec.RequireInODInterval(tr, odInterval, 2, back...)
				g.Expect(spec.ServedByEach(g, tr, back...)).To(gomega.ContainElement("b2"),
					"un-ejected at the second sweep, e1 should take its share again, over b2:%s", spec.RenderAnswers(spec.Answers(tr, back...)))
			}},
			{Requirement: "A61-OD-EJECT-ALL-ADDRESSES", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				a2 := spec.Addr(tr, "b2/ipv4")
				n1, _, _ := spec.RPCSpan(tr, ejected[0])
				_, nLast, _ := spec.RPCSpan(tr, ejected[len(ejected)-1])
				ready := trace.Select(spec.SubchannelEvents(tr, a2, trace.KindSubchannelState), func(e trace.Event) bool { return e.State == "READY" })
				g.Expect(ready).NotTo(gomega.BeEmpty(), "e1 should reconnect over b2 after b1 went down")
				g.Expect(ready[0].T).To(gomega.BeNumerically("<", n1), "b2's subchannel should be READY before the RPCs that judge the ejection")
				picks := trace.Select(spec.SubchannelEvents(tr, a2, trace.KindPick), func(e trace.Event) bool { return e.T <= nLast })
				g.Expect(picks).To(gomega.BeEmpty(), "no RPC should be picked on b2 while e1 is ejected:%s", spec.Render(picks))
			}},
		},
	}
}

// xdsODKeysAddressesOnly: eds1 as in xdsODPerEndpoint, e1 = b1/ipv4 with
// additional_addresses [b2/ipv4], e2 = b3/ipv4 in locality z1; b1 fails
// every RPC from 0.2 s. Between e1's failures the endpoints' resolver
// attributes change while their addresses stay: at 0.45 s EDS version 2
// gives both a HEALTHY health status (and e1 a weight); at 1.45 s, with e1
// ejected, version 3 moves both to locality z2 (every endpoint's locality,
// and so its place in the policy tree, changes) and leaves their health
// unset again. A61 (Outlier Detection): the maps are keyed by addresses
// only, never by attributes, so e1's four failures before version 2 and
// four after it are counted together (8, over request_volume 6) and the
// first sweep ejects it: RPCs at 1.3 s reach b3 alone; and e1 stays ejected
// through version 3: RPCs at 1.65 s reach b3 alone, until the second sweep
// (RPCs at 2.4 s reach b1 again; its fault was cleared at 1.1 s). Had an
// attribute entered the key, each version would have started e1 afresh:
// no ejection (4 requests each), or an ejection forgotten at version 3.
func xdsODKeysAddressesOnly() spec.Spec {
	e1 := xds.Endpoint{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}}
	e2 := xds.Endpoint{Addr: "b3/ipv4"}
	h1, h2 := e1, e2
	h1.Health, h1.Weight, h2.Health = xds.HealthHealthy, 3, xds.HealthHealthy
	before, after, ejected, moved, back := spec.RPCIDs("a", 8), spec.RPCIDs("f", 8), spec.RPCIDs("p", 4), spec.RPCIDs("n", 4), spec.RPCIDs("m", 4)
	b := odScenario("xds-od-keys-addresses-only", oneLocality("eds1", e1, e2)).
		Describe("eds1 (round_robin, outlier_detection as xds-od-per-endpoint): e1 = b1/ipv4 + additional [b2/ipv4], e2 = b3/ipv4 in z1; "+
			"times from the first EDS ACK: b1 fails RPCs from 0.2 s; 8 RPCs at 0.3 s; at 0.45 s both HEALTHY (e1 weight 3); 8 RPCs at 0.55 s; e1 ejected at the first sweep; "+
			"b1's fault cleared at 1.1 s; at 1.45 s both move to z2, health unset; RPCs at 1.3 s, 1.65 s and 2.4 s").
		AfterDelay(spec.ODCounting, 200*time.Millisecond, scenario.Fault("b1/ipv4", scenario.FailRPCs))
	spec.SendRPCsAfter(b, spec.ODCounting, 300*time.Millisecond, before)
	b.AfterDelay(spec.ODCounting, 450*time.Millisecond, scenario.ServeXDS(xdsResources(odCluster(), oneLocality("eds1", h1, h2))))
	spec.SendRPCsAfter(b, spec.ODCounting, 550*time.Millisecond, after)
	b.AfterDelay(spec.ODCounting, 1100*time.Millisecond, scenario.Clear("b1/ipv4"))
	spec.SendRPCsAfter(b, spec.ODCounting, 1300*time.Millisecond, ejected)
	b.AfterDelay(spec.ODCounting, 1450*time.Millisecond, scenario.ServeXDS(xdsResources(odCluster(), localityNamed("eds1", "z2", e1, e2))))
	spec.SendRPCsAfter(b, spec.ODCounting, 1650*time.Millisecond, moved)
	spec.SendRPCsAfter(b, spec.ODCounting, 2400*time.Millisecond, back)
	s := b.FinishAfterEveryRPC().End(6 * time.Second).MustBuild()
	counted := slices.Concat([]string{"w1"}, before, after)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionOD,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Agreement: spec.ODAgreement(s, slices.Concat(ejected, moved)...),
		Checks: []spec.Check{
			{Requirement: "A61-OD-KEYS-ADDRESSES-ONLY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				e1 := []string{spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4")}
				for _, v := range []string{"1", "2", "3"} {
					verdict.Require(spec.ACKed(tr, spec.TypeEDS, v), "EDS version %s was not ACKed:%s", v, spec.Render(spec.Of(tr, trace.KindXDSRequest)))
				}
				requireOutlier(tr, counted, e1, spec.Addr(tr, "b3/ipv4"))
				requireAcrossVersion2(tr, before, after, e1)
				spec.RequireInODInterval(tr, odInterval, 1, slices.Concat(ejected, moved)...)
				g.Expect(spec.ServedByEach(g, tr, ejected...)).To(gomega.HaveEach("b3"),
					"the first sweep should eject e1: its failures before and after its attributes changed are one count:%s", spec.RenderAnswers(spec.Answers(tr, ejected...)))
				g.Expect(spec.ServedByEach(g, tr, moved...)).To(gomega.HaveEach("b3"),
					"e1 should stay ejected when its locality and health status change:%s", spec.RenderAnswers(spec.Answers(tr, moved...)))
				spec.RequireInODInterval(tr, odInterval, 2, back...)
				g.Expect(spec.ServedByEach(g, tr, back...)).To(gomega.ContainElement("b1"),
					"un-ejected at the second sweep, e1 takes its share again:%s", spec.RenderAnswers(spec.Answers(tr, back...)))
			}},
		},
	}
}

// requireAcrossVersion2 states the precondition of xdsODKeysAddressesOnly:
// e1 failed RPCs both before EDS version 2 was served and after the
// client ACKed it, and neither side alone reaches request_volume (else a
// count restarted by version 2 would eject too).
func requireAcrossVersion2(tr *trace.Trace, before, after []string, e1 []string) {
	served, _ := spec.XDSServedAt(tr, "2")
	acks := trace.Select(spec.XDSRequests(tr, spec.TypeEDS, trace.XDSACK), func(e trace.Event) bool { return e.Version == "2" })
	_, lastBefore, _ := spec.RPCSpan(tr, before[len(before)-1])
	firstAfter, _, _ := spec.RPCSpan(tr, after[0])
	verdict.Require(len(acks) > 0 && lastBefore < served && acks[0].T < firstAfter,
		"EDS version 2 should come between the two groups of RPCs (served %s, ACKed%s)", trace.FormatT(served), spec.Render(acks))
	for _, group := range [][]string{before, after} {
		as := spec.AnsweredBy(spec.Answers(tr, group...), e1...)
		t := spec.TallyAnswers(as)
		failed := t[e1[0]].Failed + t[e1[1]].Failed
		verdict.Require(failed > 0 && len(as) < odVolume,
			"e1 should fail some RPCs of each group, fewer than %d in one:%s", odVolume, spec.RenderAnswers(as))
	}
}

// requireOutlier states the preconditions of a check of what the first
// sweep did with e1 (addresses e1) and e2 (address e2), given RPCs counted:
// they were all answered before the first sweep; e1 answered at least
// request_volume of them, more than half failed (failure_percentage 50);
// e2 answered at least request_volume, none failed (minimum_hosts 2: both
// endpoints have the volume, and only e1 is an outlier).
func requireOutlier(tr *trace.Trace, counted, e1 []string, e2 string) {
	spec.RequireInODInterval(tr, odInterval, 0, counted...)
	as := spec.Answers(tr, counted...)
	t := spec.TallyAnswers(as)
	var total, failed int
	for _, a := range e1 {
		total, failed = total+t[a].Total, failed+t[a].Failed
	}
	verdict.Require(total >= odVolume && 2*failed > total,
		"before the first sweep e1 should have at least %d requests, more than half failed; it had %d, %d failed:%s", odVolume, total, failed, spec.RenderAnswers(as))
	verdict.Require(t[e2].Total >= odVolume && t[e2].Failed == 0,
		"before the first sweep e2 should have at least %d requests, none failed; it had %d, %d failed:%s", odVolume, t[e2].Total, t[e2].Failed, spec.RenderAnswers(as))
}

// odScenario starts a scenario of this file: backends b1, b2 and b3
// (IPv4), eds1 (odCluster) with load assignment la served at 0, the
// dualstack guard open, and w1 at 0 (wait_for_ready) to get the channel
// going.
func odScenario(name string, la xds.LoadAssignment) *scenario.Builder {
	b := scenario.New(name).
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.ServeXDS(xdsResources(odCluster(), la)))
	return spec.SendRPCs(b, 0, []string{"w1"})
}

// odCluster is EDS cluster eds1 (round_robin) with the outlier_detection
// of every outlier spec: failure percentage (threshold 50, enforcement
// 100, minimum_hosts 2, request_volume odVolume), interval odInterval,
// base_ejection_time odBase, max_ejection_percent 50.
func odCluster() xds.Cluster {
	return xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin,
		OutlierDetection: &xds.OutlierDetection{
			Interval: odInterval, BaseEjectionTime: odBase, MaxEjectionPercent: 50,
			FailurePercentage: &xds.FailurePercentage{Threshold: 50, Enforcement: 100, MinimumHosts: 2, RequestVolume: odVolume},
		}}
}
