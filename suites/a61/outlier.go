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

// sectionOD is A61's outlier detection section, as the catalogue spells it.
const sectionOD = "Outlier Detection"

// odInterval and odBase are the cluster's outlier_detection interval and
// base_ejection_time in xdsODPerEndpoint.
const (
	odInterval = 2 * time.Second
	odBase     = time.Second
)

// xdsODPerEndpoint: EDS cluster eds1 (round_robin) with outlier_detection
// (failure percentage: threshold 50, enforcement 100, minimum_hosts 2,
// request_volume 6; interval 2 s, base_ejection_time 1 s) and two
// endpoints: e1 = b1/ipv4 with additional_addresses [b2/ipv4], e2 = b3/ipv4.
//
// The lab backends always answer OK, so failures are made by the client:
// RPCs steered to one address with the session cookie
// (session.Cookie; outlier_detection sits above
// xds_override_host, so it counts them) and given a deadline shorter than
// the simulated round trip (1 ms) end DEADLINE_EXCEEDED after the pick.
// e1 gets 3 failures on b1 and 1 success and 3 failures on b2: 7 requests,
// 6 failed, while neither address alone reaches request_volume 6; e2 gets 6
// successes. Counted per endpoint, e1 is the one outlier at the 2 s sweep;
// counted per address, only b3 would qualify and nothing would be ejected.
// RPCs without a session at 2.5 s all reach b3; e1 is un-ejected at the 4 s
// sweep and RPCs at 4.5 s reach b1 again, over the connection pick_first
// kept.
//
// Simulation only: the lab's backends always answer OK, and a
// sub-millisecond deadline does not make its RPCs fail after the pick
// deterministically. A61-OD-EJECT-ALL-ADDRESSES is not checked here: b2's
// subchannel is xds_override_host's, with no health watch, so its ejection
// leaves no event in the trace (xdsODEjectAllAddresses checks it).
func xdsODPerEndpoint() spec.Spec {
	b1, b2, b3 := runner.AddrOf("b1", 0, scenario.IPv4), runner.AddrOf("b2", 1, scenario.IPv4), runner.AddrOf("b3", 2, scenario.IPv4)
	la := oneLocality("eds1",
		xds.Endpoint{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}},
		xds.Endpoint{Addr: "b3/ipv4"})
	b := scenario.New("xds-od-per-endpoint").
		Describe("eds1 (round_robin, outlier_detection failure_percentage 50%, request_volume 6, minimum_hosts 2, interval 2 s): "+
			"e1 = b1/ipv4 + additional [b2/ipv4], e2 = b3/ipv4; 3 failed RPCs on b1, 1 OK and 3 failed on b2, 6 OK on b3; "+
			"RPCs without a session at 2.5 s and 4.5 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.ServeXDS(xdsResources(odCluster(), la)))
	odSend(b, time.Second, "w", 1, scenario.WaitForReady(), session.Cookie(b2))
	odSend(b, 1100*time.Millisecond, "a", 3, session.Cookie(b1), odFail)
	odSend(b, 1200*time.Millisecond, "c", 3, session.Cookie(b2), odFail)
	odSend(b, 1300*time.Millisecond, "h", 6, session.Cookie(b3))
	odSend(b, 2500*time.Millisecond, "n", 4)
	odSend(b, 4500*time.Millisecond, "m", 4)
	s := b.End(5 * time.Second).MustBuild()

	return spec.Spec{
		Doc: requirement.A61, Section: sectionOD,
		Labels:   []string{spec.LabelXDS},
		Scenario: s,
		Modes:    []trace.Mode{spec.Sim},
		Checks: []spec.Check{
			{Requirement: "A61-OD-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectResults(g, tr, "w1", "b2")
				for _, id := range []string{"a1", "a2", "a3", "c1", "c2", "c3"} {
					spec.ExpectFailed(g, tr, id)
				}
				for _, id := range []string{"h1", "h2", "h3", "h4", "h5", "h6"} {
					expectResults(g, tr, id, "b3")
				}
				for _, id := range []string{"n1", "n2", "n3", "n4"} {
					expectResults(g, tr, id, "b3")
				}
			}},
			{Requirement: "A61-OD-EJECT-VIA-HEALTH", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				got := map[string]int{}
				for _, id := range []string{"m1", "m2", "m3", "m4"} {
					got[spec.ServedBy(g, tr, id)]++
				}
				g.Expect(got).To(gomega.Equal(map[string]int{"b1": 2, "b3": 2}), "un-ejected, e1 (b1) takes its share again")
			}},
			{Requirement: "A61-OD-EJECT-VIA-HEALTH", Needs: []trace.Source{trace.SourcePolicy}, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				a1 := spec.Addr(tr, "b1/ipv4")
				news := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelNew), func(e trace.Event) bool {
					return len(e.Addrs) > 0 && e.Addrs[0] == a1
				})
				g.Expect(news).To(gomega.HaveLen(1), "pick_first keeps its one subchannel to b1 through the ejection:%s", spec.Render(news))
				sc := news[0].Subchannel
				st := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState, trace.KindSubchannelShutdown), func(e trace.Event) bool {
					return e.Subchannel == sc && e.T >= time.Second && e.T < tr.Header.Scenario.End
				})
				g.Expect(st).To(gomega.BeEmpty(), "b1's connection should stay READY while e1 is ejected (ejection is a health signal):%s", spec.Render(st))
				var m []trace.Event
				for _, id := range []string{"m1", "m2", "m3", "m4"} {
					m = append(m, trace.Select(tr.Events, trace.OfKind(trace.KindPick), func(e trace.Event) bool { return e.RPC == id && e.Addr == a1 })...)
				}
				g.Expect(m).NotTo(gomega.BeEmpty())
				g.Expect(m).To(gomega.HaveEach(gomega.HaveField("Subchannel", sc)), "after un-ejection b1 is used over the kept subchannel")
			}},
		},
	}
}

// xdsODEjectAllAddresses: eds1 as in xdsODPerEndpoint, e1 = b1/ipv4 with
// additional_addresses [b2/ipv4], e2 = b3/ipv4. e1's pick_first connects
// to b1; 6 RPCs steered to b1 fail and 6 to b3 succeed, so the 2 s sweep
// ejects e1. At 2.1 s b1 goes down: e1's connection is lost, round_robin
// takes its pick_first out of IDLE, and it connects to b2, e1's other
// address, while e1 is ejected. A61 (Outlier Detection): ejection applies
// to the subchannels of every address of the endpoint, so b2's READY
// subchannel reports unhealthy too and RPCs at 2.5 s all reach b3 (ejecting
// b1's address alone would hand them to b2 half the time). The 4 s sweep
// un-ejects e1, again for every address: RPCs at 4.5 s reach b2 and b3.
//
// Simulation only, for the failures (see xdsODPerEndpoint).
func xdsODEjectAllAddresses() spec.Spec {
	b1, b3 := runner.AddrOf("b1", 0, scenario.IPv4), runner.AddrOf("b3", 2, scenario.IPv4)
	la := oneLocality("eds1",
		xds.Endpoint{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}},
		xds.Endpoint{Addr: "b3/ipv4"})
	b := scenario.New("xds-od-eject-all-addresses").
		Describe("eds1 (round_robin, outlier_detection as xds-od-per-endpoint): e1 = b1/ipv4 + additional [b2/ipv4], e2 = b3/ipv4; "+
			"6 failed RPCs on b1, 6 OK on b3; e1 ejected at 2 s; b1 down at 2.1 s, so e1 reconnects over b2; "+
			"RPCs without a session at 2.5 s and 4.5 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.ServeXDS(xdsResources(odCluster(), la)))
	odSend(b, 1100*time.Millisecond, "a", 6, session.Cookie(b1), odFail)
	odSend(b, 1300*time.Millisecond, "h", 6, session.Cookie(b3))
	b.At(2100*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Down))
	odSend(b, 2500*time.Millisecond, "n", 4)
	odSend(b, 4500*time.Millisecond, "m", 4)
	s := b.End(5 * time.Second).MustBuild()
	return spec.Spec{
		Doc: requirement.A61, Section: sectionOD,
		Labels:   []string{spec.LabelXDS},
		Scenario: s,
		Modes:    []trace.Mode{spec.Sim},
		Checks: []spec.Check{
			{Requirement: "A61-OD-EJECT-ALL-ADDRESSES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, id := range spec.RPCIDs("a", 6) {
					spec.ExpectFailed(g, tr, id)
				}
				for _, id := range spec.RPCIDs("n", 4) {
					expectResults(g, tr, id, "b3")
				}
				g.Expect(servedCounts(g, tr, spec.RPCIDs("m", 4)...)).To(gomega.Equal(map[string]int{"b2": 2, "b3": 2}),
					"un-ejected, e1 takes its share again, over b2")
			}},
			{Requirement: "A61-OD-EJECT-ALL-ADDRESSES", Needs: []trace.Source{trace.SourcePolicy}, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				a2 := spec.Addr(tr, "b2/ipv4")
				ready := spec.SubchannelEvents(tr, a2, trace.KindSubchannelState)
				ready = trace.Select(ready, func(e trace.Event) bool { return e.State == "READY" })
				g.Expect(ready).NotTo(gomega.BeEmpty(), "e1 should reconnect over b2 after b1 went down")
				g.Expect(ready[0].T).To(gomega.BeNumerically("<", 2500*time.Millisecond),
					"b2's subchannel should be READY before the RPCs at 2.5 s, while e1 is ejected")
				picks := trace.Select(spec.SubchannelEvents(tr, a2, trace.KindPick), func(e trace.Event) bool { return e.T < 4*time.Second })
				g.Expect(picks).To(gomega.BeEmpty(), "no RPC should be picked on b2 while e1 is ejected:%s", spec.Render(picks))
			}},
		},
	}
}

// xdsODKeysAddressesOnly: eds1 as in xdsODPerEndpoint, e1 = b1/ipv4 with
// additional_addresses [b2/ipv4], e2 = b3/ipv4. Between e1's failures the
// endpoints' resolver attributes change while their addresses stay: at
// 1.5 s EDS version 2 gives both a HEALTHY health status (and e1 a weight);
// at 2.2 s, with e1 ejected, version 3 moves both to locality z2 (every
// endpoint's locality, and so its place in the policy tree, changes) and
// leaves their health unset again. A61 (Outlier Detection): the maps are
// keyed by addresses only, never by attributes, so e1's 3 failures on b1
// before version 2 and 3 after it are counted together (6, request_volume)
// and the 2 s sweep ejects it; and e1 stays ejected through version 3
// until the 4 s sweep. Had an attribute entered the key, each version
// would have started e1 afresh: no ejection at 2 s (3 requests), or an
// ejection forgotten at 2.2 s.
//
// Simulation only, for the failures (see xdsODPerEndpoint).
func xdsODKeysAddressesOnly() spec.Spec {
	b1, b3 := runner.AddrOf("b1", 0, scenario.IPv4), runner.AddrOf("b3", 2, scenario.IPv4)
	e1 := xds.Endpoint{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}}
	e2 := xds.Endpoint{Addr: "b3/ipv4"}
	h1, h2 := e1, e2
	h1.Health, h1.Weight, h2.Health = xds.HealthHealthy, 3, xds.HealthHealthy
	b := scenario.New("xds-od-keys-addresses-only").
		Describe("eds1 (round_robin, outlier_detection as xds-od-per-endpoint): e1 = b1/ipv4 + additional [b2/ipv4], e2 = b3/ipv4 in z1; "+
			"3 failed RPCs on b1, 6 OK on b3; at 1.5 s both HEALTHY (e1 weight 3); 3 more failed on b1; e1 ejected at 2 s; "+
			"at 2.2 s both move to z2, health unset; RPCs without a session at 2.1 s, 2.5 s and 4.5 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.ServeXDS(xdsResources(odCluster(), oneLocality("eds1", e1, e2))))
	odSend(b, 1100*time.Millisecond, "a", 3, session.Cookie(b1), odFail)
	odSend(b, 1300*time.Millisecond, "h", 6, session.Cookie(b3))
	b.At(1500*time.Millisecond, scenario.ServeXDS(xdsResources(odCluster(), oneLocality("eds1", h1, h2))))
	odSend(b, 1600*time.Millisecond, "f", 3, session.Cookie(b1), odFail)
	odSend(b, 2100*time.Millisecond, "p", 4)
	b.At(2200*time.Millisecond, scenario.ServeXDS(xdsResources(odCluster(), localityNamed("eds1", "z2", e1, e2))))
	odSend(b, 2500*time.Millisecond, "n", 4)
	odSend(b, 4500*time.Millisecond, "m", 4)
	s := b.End(5 * time.Second).MustBuild()
	return spec.Spec{
		Doc: requirement.A61, Section: sectionOD,
		Labels:   []string{spec.LabelXDS},
		Scenario: s,
		Modes:    []trace.Mode{spec.Sim},
		Checks: []spec.Check{
			{Requirement: "A61-OD-KEYS-ADDRESSES-ONLY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, v := range []string{"1", "2", "3"} {
					g.Expect(spec.ACKed(tr, spec.TypeEDS, v)).To(gomega.BeTrue(), "EDS version %s should be ACKed:%s", v, spec.Render(spec.Of(tr, trace.KindXDSRequest)))
				}
				for _, id := range append(spec.RPCIDs("a", 3), spec.RPCIDs("f", 3)...) {
					spec.ExpectFailed(g, tr, id)
				}
				g.Expect(servedCounts(g, tr, spec.RPCIDs("p", 4)...)).To(gomega.Equal(map[string]int{"b3": 4}),
					"the 2 s sweep should eject e1: its failures before and after its attributes changed are one count")
				g.Expect(servedCounts(g, tr, spec.RPCIDs("n", 4)...)).To(gomega.Equal(map[string]int{"b3": 4}),
					"e1 should stay ejected when its locality and health status change")
				g.Expect(servedCounts(g, tr, spec.RPCIDs("m", 4)...)).To(gomega.Equal(map[string]int{"b1": 2, "b3": 2}),
					"un-ejected at the 4 s sweep, e1 takes its share again")
			}},
		},
	}
}

// servedCounts counts the RPCs ids per backend that answered them.
func servedCounts(g gomega.Gomega, tr *trace.Trace, ids ...string) map[string]int {
	got := map[string]int{}
	for _, id := range ids {
		got[spec.ServedBy(g, tr, id)]++
	}
	return got
}

// odCluster is EDS cluster eds1 (round_robin) with the outlier_detection
// of every outlier spec: failure percentage (threshold 50, enforcement
// 100, minimum_hosts 2, request_volume 6), interval odInterval,
// base_ejection_time odBase, max_ejection_percent 50.
func odCluster() xds.Cluster {
	return xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin,
		OutlierDetection: &xds.OutlierDetection{
			Interval: odInterval, BaseEjectionTime: odBase, MaxEjectionPercent: 50,
			FailurePercentage: &xds.FailurePercentage{Threshold: 50, Enforcement: 100, MinimumHosts: 2, RequestVolume: 6},
		}}
}

// odFail is a deadline shorter than the simulated round trip (1 ms): the
// RPC ends DEADLINE_EXCEEDED after the pick, a failure outlier detection
// counts.
var odFail = scenario.Deadline(500 * time.Microsecond)

// odSend sends n RPCs prefix1 … prefixN one every 10 ms from at, with a
// deadline of 5 s unless opts set another.
func odSend(b *scenario.Builder, at time.Duration, prefix string, n int, opts ...scenario.RPCOption) {
	for i := range n {
		o := append([]scenario.RPCOption{scenario.Deadline(5 * time.Second)}, opts...)
		b.At(at+time.Duration(i)*10*time.Millisecond, scenario.RPC(prefix+string(rune('1'+i)), o...))
	}
}

// expectResults checks that RPC id was answered by backend.
func expectResults(g gomega.Gomega, tr *trace.Trace, id, backend string) {
	g.ExpectWithOffset(1, spec.ServedBy(g, tr, id)).To(gomega.Equal(backend), "RPC %s", id)
}
