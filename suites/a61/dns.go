package a61

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/match"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

const sectionResolverEndpoints = "Allow Resolvers to Return Multiple Addresses Per Endpoint"

// dnsTwoFamilies is a dns scenario: the lab DNS serves the scenario's name
// with an A record (b1, IPv4 only) and an AAAA record (b2, IPv6 only),
// written as one endpoint of the resolve step: the records carry no
// grouping, and the client's DNS resolver makes each address an endpoint
// of its own (A61). The RPCs come once both backends can have connected.
func dnsTwoFamilies(name, desc, policy string, b1Fault scenario.FaultType) *scenario.Scenario {
	b := scenario.New(name).
		Describe(desc).
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv6Only).
		Target(scenario.TargetDNS).
		LB(policy, `{}`)
	if b1Fault != "" {
		b.At(0, scenario.Fault("b1/ipv4", b1Fault))
	}
	b.At(0, scenario.Resolve(scenario.EP("b1/ipv4", "b2/ipv6")))
	spec.SendRPCs(b, 300*time.Millisecond, dnsRPCs)
	return b.After(scenario.On("rpc-result").WithRPC(dnsRPCs[len(dnsRPCs)-1]), scenario.Finish()).
		End(5 * time.Second).
		MustBuild()
}

// dnsRPCs are the RPCs of the dns specs.
var dnsRPCs = spec.RPCIDs("r", 4)

// dnsAgreement: the simulator and the lab record the same resolver update
// (the DNS resolver's answer, scenario.DNSAnswer) and the same RPC
// outcomes; which backend round_robin starts on, and which address a
// resolver sorts first, is the implementation's.
var dnsAgreement = &compare.Options{
	Select:    []trace.Pred{trace.OfKind(trace.KindResolverUpdate, trace.KindRPCResult)},
	Ignore:    []string{"backend"},
	Tolerance: time.Second,
}

// dnsRoundRobin: round_robin over a name with an A and an AAAA record on
// two backends spreads the RPCs over both: two endpoints.
func dnsRoundRobin() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionResolverEndpoints,
		Scenario: dnsTwoFamilies("dns-rr-two-families",
			"target dns; round_robin; the lab DNS serves an A record (b1) and an AAAA record (b2); four RPCs",
			"round_robin", ""),
		Checks: []spec.Check{
			{Requirement: "A61-DNS-ENDPOINT-PER-ADDRESS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// round_robin spreads its picks evenly over its READY
				// endpoints: two of them, one per DNS address.
				spec.RequireConnectedBefore(tr, spec.RPCStart(g, tr, dnsRPCs[0]), "b1", "b2")
				backends := spec.ServedByEach(g, tr, dnsRPCs...)
				n := map[string]int{}
				for _, b := range backends {
					n[b]++
				}
				g.Expect(n).To(gomega.Equal(map[string]int{"b1": 2, "b2": 2}),
					"round_robin over one endpoint per DNS address alternates between b1 (A) and b2 (AAAA): %v", backends)
			}},
		},
		Agreement: dnsAgreement,
	}
}

// dnsPickFirst: pick_first over the same name, b1's address refusing.
// Whichever address the client's resolver sorts first, pick_first sees
// both (two endpoints, flattened: case B) and ends on b2, whose one
// connection serves every RPC.
func dnsPickFirst() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionAddr,
		Scenario: dnsTwoFamilies("dns-pf-two-families",
			"target dns; pick_first; the lab DNS serves an A record (b1, which refuses) and an AAAA record (b2); four RPCs",
			"pick_first", scenario.Reset),
		Checks: []spec.Check{
			{Requirement: "A61-PF-DNS-EVERY-ADDRESS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				backends := spec.ServedByEach(g, tr, dnsRPCs...)
				g.Expect(backends).To(gomega.HaveEach("b2"),
					"pick_first gets b2's AAAA address besides b1's refusing A one, and its connection serves every RPC")
				g.Expect(connectionsPerBackend(tr)).To(gomega.Equal(map[string]int{"b2": 1}),
					"pick_first makes one connection, to b2")
			}},
		},
		Agreement: dnsAgreement,
	}
}

// dnsHappyEyeballs: pick_first over the same name, both records' backends
// dropping SYNs until 400 ms: whichever address the client's resolver
// sorts first, Happy Eyeballs runs over the two DNS endpoints as over one
// flattened list: the second address is attempted one Connection Attempt
// Delay (250 ms) after the first, whose SYN is unanswered.
func dnsHappyEyeballs() spec.Spec {
	b := scenario.New("dns-pf-happy-eyeballs").
		Describe("target dns; pick_first; the lab DNS serves an A record (b1) and an AAAA record (b2), both dropping SYNs until 400 ms; r1 waits for ready").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv6Only).
		Target(scenario.TargetDNS).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
		At(0, scenario.Fault("b2/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4", "b2/ipv6"))).
		At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(4*time.Second))).
		At(400*time.Millisecond, scenario.Clear("b1/ipv4")).
		At(400*time.Millisecond, scenario.Clear("b2/ipv6")).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish())
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: b.End(5 * time.Second).MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-DELAY-DEFAULT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				first, second := dnsAttemptOrder(g, tr)
				spec.RequirePromptFirstAttempt(tr)
				requireHERan(tr)
				spec.RequireSteadyBetweenAttempts(tr, first, second, "250 ms Connection Attempt Delay")
				g.Expect(tr).To(match.HaveGapBetweenAttempts(first, second, 250*time.Millisecond, spec.TimerWithin(tr)),
					"pick_first's Happy Eyeballs over the DNS resolver's two endpoints")
			}},
			{Requirement: "A61-HE-NOT-GATED", Assert: expectHENotGated},
		},
		Agreement: synAgreement,
	}
}

// dnsAttemptOrder is the address of the first connection attempt and the
// other of the two DNS addresses: which comes first is the client's
// resolver's choice (RFC 6724 or glibc's table).
func dnsAttemptOrder(g gomega.Gomega, tr *trace.Trace) (first, second string) {
	v4, v6 := spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv6")
	as := spec.Attempts(tr.Events)
	g.Expect(as).NotTo(gomega.BeEmpty(), "no connection attempt")
	switch as[0].Addr {
	case v4:
		return v4, v6
	case v6:
		return v6, v4
	}
	g.Expect(as[0].Addr).To(gomega.BeElementOf(v4, v6), "the first attempt should go to one of the name's addresses")
	return "", ""
}
