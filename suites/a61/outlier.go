package a61

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/overridehost"
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
// (overridehost.EncodeCookie; outlier_detection sits above
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
// leaves no event in the trace.
func xdsODPerEndpoint() spec.Spec {
	b1, b2, b3 := runner.AddrOf("b1", 0, scenario.IPv4), runner.AddrOf("b2", 1, scenario.IPv4), runner.AddrOf("b3", 2, scenario.IPv4)
	session := func(addr string) scenario.RPCOption {
		return scenario.Metadata(overridehost.SessionHeader, overridehost.EncodeCookie([]string{addr}, ""))
	}
	cluster := scenario.XDSCluster{Name: "eds1", Type: scenario.ClusterEDS, LBPolicy: scenario.XDSRoundRobin,
		OutlierDetection: &scenario.XDSOutlierDetection{
			Interval: odInterval, BaseEjectionTime: odBase, MaxEjectionPercent: 50,
			FailurePercentage: &scenario.XDSFailurePercentage{Threshold: 50, Enforcement: 100, MinimumHosts: 2, RequestVolume: 6},
		}}
	la := scenario.XDSLoadAssignment{Cluster: "eds1", Priorities: []scenario.XDSPriority{{Localities: []scenario.XDSLocality{
		{Name: "z1", Weight: 1, Endpoints: []scenario.XDSEndpoint{
			{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}},
			{Addr: "b3/ipv4"},
		}},
	}}}}
	b := scenario.New("xds-od-per-endpoint").
		Describe("eds1 (round_robin, outlier_detection failure_percentage 50%, request_volume 6, minimum_hosts 2, interval 2 s): "+
			"e1 = b1/ipv4 + additional [b2/ipv4], e2 = b3/ipv4; 3 failed RPCs on b1, 1 OK and 3 failed on b2, 6 OK on b3; "+
			"RPCs without a session at 2.5 s and 4.5 s").
		Backend("b1", scenario.V4Only).
		Backend("b2", scenario.V4Only).
		Backend("b3", scenario.V4Only).
		XDS("svc.conform").
		At(0, xdsResources(cluster, la))
	send := func(at time.Duration, prefix string, n int, opts ...scenario.RPCOption) {
		for i := range n {
			o := append([]scenario.RPCOption{scenario.Deadline(5 * time.Second)}, opts...)
			b.At(at+time.Duration(i)*10*time.Millisecond, scenario.RPC(prefix+string(rune('1'+i)), o...))
		}
	}
	fail := scenario.Deadline(500 * time.Microsecond)
	send(time.Second, "w", 1, scenario.WaitForReady(), session(b2))
	send(1100*time.Millisecond, "a", 3, session(b1), fail)
	send(1200*time.Millisecond, "c", 3, session(b2), fail)
	send(1300*time.Millisecond, "h", 6, session(b3))
	send(2500*time.Millisecond, "n", 4)
	send(4500*time.Millisecond, "m", 4)
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
					expectFailed(g, tr, id)
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
					got[servedBy(g, tr, id)]++
				}
				g.Expect(got).To(gomega.Equal(map[string]int{"b1": 2, "b3": 2}), "un-ejected, e1 (b1) takes its share again")
			}},
			{Requirement: "A61-OD-EJECT-VIA-HEALTH", Needs: []trace.Source{trace.SourcePolicy}, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				a1 := spec.Addr(tr, "b1/ipv4")
				news := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelNew), func(e trace.Event) bool {
					return len(e.Addrs) > 0 && e.Addrs[0] == a1
				})
				g.Expect(news).To(gomega.HaveLen(1), "pick_first keeps its one subchannel to b1 through the ejection:\n%s", renderEvents(news))
				sc := news[0].Subchannel
				st := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState, trace.KindSubchannelShutdown), func(e trace.Event) bool {
					return e.Subchannel == sc && e.T >= time.Second && e.T < tr.Header.Scenario.End
				})
				g.Expect(st).To(gomega.BeEmpty(), "b1's connection should stay READY while e1 is ejected (ejection is a health signal):\n%s", renderEvents(st))
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

// expectResults checks that RPC id was answered by backend.
func expectResults(g gomega.Gomega, tr *trace.Trace, id, backend string) {
	g.ExpectWithOffset(1, servedBy(g, tr, id)).To(gomega.Equal(backend), "RPC %s", id)
}

// servedBy is the backend that answered RPC id, which must have succeeded.
func servedBy(g gomega.Gomega, tr *trace.Trace, id string) string {
	r := trace.Select(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult && e.RPC == id })
	g.ExpectWithOffset(2, r).To(gomega.HaveLen(1), "RPC %s should have one result", id)
	g.ExpectWithOffset(2, r[0].Code).To(gomega.Or(gomega.BeEmpty(), gomega.Equal("OK")), "RPC %s should succeed: %s", id, r[0].Err)
	return r[0].Backend
}

// expectFailed checks that RPC id was picked (so outlier detection saw it)
// and failed.
func expectFailed(g gomega.Gomega, tr *trace.Trace, id string) {
	r := trace.Select(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult && e.RPC == id })
	g.ExpectWithOffset(1, r).To(gomega.HaveLen(1), "RPC %s should have one result", id)
	g.ExpectWithOffset(1, r[0].Code).NotTo(gomega.Or(gomega.BeEmpty(), gomega.Equal("OK")), "RPC %s should fail", id)
}

func renderEvents(evs []trace.Event) string {
	var s string
	for _, e := range evs {
		s += "  " + e.String() + "\n"
	}
	return s
}
