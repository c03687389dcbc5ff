// Package a61 is the suite for gRFC A61 (IPv4 and IPv6 Dualstack Backend
// Support): its non-xDS parts, as specs the Ginkgo suite and `conform run`
// both execute.
package a61

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/match"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/monitor"
	"github.com/conformlab/conform/suites/spec"
)

const sectionHE = "Happy Eyeballs in the pick_first LB Policy"

// labSlack is how far a lab time may stray where a check does not judge a
// timer's value (those use spec.TimerWithin, the lab's measured jitter, and
// spec.RequireSteadyMachine): a reaction to one of the scenario's steps,
// which the harness delivers across a process boundary for a driver; a
// count of Connection Attempt Delays after a resolver update (he-new-list,
// he-turn-idle: the answers differ by a whole delay, and the delivery and
// every delay's jitter add up); and the simulator against the lab
// (absolute times).
const labSlack = 50 * time.Millisecond

// Specs are the A61 specs, in document order.
func Specs() []spec.Spec {
	specs := []spec.Spec{
		// Allow Resolvers to Return Multiple Addresses Per Endpoint
		dnsRoundRobin(),
		// Happy Eyeballs in the pick_first LB Policy
		heDroppedIPv6(), heRefusedIPv6(), heFirstReadyWins(), heThreeDropped(),
		heDelayClamp("he-delay-clamp-low", "30ms", 100*time.Millisecond),
		heDelayClamp("he-delay-clamp-high", "5s", 2*time.Second),
		heAllRefused(), heNewList(), heTurnTFSkips(), heTurnIdle(), dnsHappyEyeballs(),
		// Move pick_first Logic Out of Subchannel (Java/Go)
		oneAddressPerSubchannel(),
		// Use pick_first as the Universal Leaf Policy
		rrDualStack(), rrErrorDetail(),
		// Address List Handling in pick_first
		addrInterleave(), addrDuplicate(), addrShuffle(), addrShuffleLists(), dnsPickFirst(),
		// Generic Health Reporting Mechanism
		healthPickFirstAlone(), healthNoneConfigured(), healthOneUnhealthy(), healthChosenAddress(),
		// Address List Updates in Java/Go
		rrReorder(), rrChangedSet(),
		// Ring Hash
		rhLazy(), rhRing(), rhAllTF(), rhNoTFConnect(),
		// Reasons for Generic Health Reporting
		healthUnhealthyIsTF(),
		// Support Multiple Addresses Per Endpoint in xDS
		xdsDualStackEndpoint(),
		// Ring Hash, through xDS: a route's hash_policy on a header
		rhXDS(), rhXDSDedup(), rhXDSReorder(),
		xdsODPerEndpoint(),
		xdsODEjectAllAddresses(),
		xdsODKeysAddressesOnly(),
		// Changes to Stateful Session Affinity
		xdsSessionAddressLists(),
		// Changes to Logical DNS Clusters
		xdsLogicalDNSOneEndpoint(),
		// Temporary environment variable protection
		xdsDualstackGuardOn(),
	}
	// Support Multiple Addresses Per Endpoint in xDS: the NACK cases
	return append(specs, xdsAddrNACKSpecs()...)
}

// synAgreement compares the connection attempts, address by address.
var synAgreement = &compare.Options{
	Select:    []trace.Pred{trace.OfKind(trace.KindSYN)},
	Ignore:    []string{"peer", "backend"}, // only the lab knows who sent it and to whom
	Tolerance: labSlack,
}

// heDroppedIPv6: the IPv6 address drops SYNs; the IPv4 attempt starts one
// Connection Attempt Delay after it, and wins.
func heDroppedIPv6() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-dropped-ipv6").
			Describe("b1's IPv6 address drops SYNs; the client gets [b1/ipv6, b1/ipv4]").
			Backend("b1", scenario.Dual).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-TIMER-NEXT-ADDRESS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireFirstAttempt(tr, spec.Addr(tr, "b1/ipv6"))
				absentUnlessAttempted(tr, spec.Addr(tr, "b1/ipv4"), 0, "no timer moved on from the hung IPv6 attempt")
				g.Expect(tr).To(match.HaveAttemptOrder(spec.Addr(tr, "b1/ipv6"), spec.Addr(tr, "b1/ipv4")))
			}},
			{Requirement: "A61-HE-DELAY-DEFAULT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				v6, v4 := spec.Addr(tr, "b1/ipv6"), spec.Addr(tr, "b1/ipv4")
				spec.RequireFirstAttempt(tr, v6)
				spec.RequirePromptFirstAttempt(tr)
				requireHERan(tr)
				spec.RequireSteadyBetweenAttempts(tr, v6, v4, "250 ms Connection Attempt Delay")
				g.Expect(tr).To(match.HaveGapBetweenAttempts(v6, v4, 250*time.Millisecond, spec.TimerWithin(tr)))
			}},
			{Requirement: "A61-HE-NOT-GATED", Assert: expectHENotGated},
		},
		Agreement: synAgreement,
	}
}

// heFirstReadyWins: b1's IPv6 address drops SYNs until 300 ms, so the IPv4
// attempt, a Connection Attempt Delay after the IPv6 one, connects first;
// an IPv6 attempt kept open would connect at the kernel's SYN
// retransmission (1 s). The first connection READY carries both RPCs, r2
// sent after that retransmission.
func heFirstReadyWins() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-first-ready-wins").
			Describe("b1's IPv6 address drops SYNs until 300 ms; the client gets [b1/ipv6, b1/ipv4]; r1 at once, r2 at 1.5 s, after the IPv6 SYN's retransmission").
			Backend("b1", scenario.Dual).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			At(300*time.Millisecond, scenario.Clear("b1/ipv6")).
			At(1500*time.Millisecond, scenario.RPC("r2", scenario.WaitForReady())).
			FinishAfterEveryRPC().
			End(3 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-FIRST-READY-WINS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				established := spec.Of(tr, trace.KindSYNACK)
				g.Expect(established).NotTo(gomega.BeEmpty(), "no connection was established")
				first := established[0]
				// The rule is exercised only when a second attempt was in
				// flight before the first connection was: a client without
				// Happy Eyeballs has one attempt at a time.
				before := trace.Select(spec.Attempts(tr.Events), func(e trace.Event) bool { return e.T < first.T })
				verdict.Require(len(order(before)) >= 2, "only one address was tried before the first connection was established: no two attempts raced")
				for _, id := range []string{"r1", "r2"} {
					g.Expect(spec.ServedOn(g, tr, id)).To(gomega.Equal(first.Addr),
						"%s should use the first connection established (%s)", id, first.Addr)
				}
			}},
		},
		Agreement: synAgreement,
	}
}

// heRefusedIPv6: the IPv6 address refuses at once; the IPv4 attempt starts
// right after the failure, not a Connection Attempt Delay later.
func heRefusedIPv6() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHE,
		Scenario: scenario.New("he-refused-ipv6").
			Describe("b1's IPv6 address refuses connections; the client gets [b1/ipv6, b1/ipv4]").
			Backend("b1", scenario.Dual).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HE-FAILURE-NEXT-ADDRESS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireFirstAttempt(tr, spec.Addr(tr, "b1/ipv6"))
				g.Expect(tr).To(match.HaveAttemptOrder(spec.Addr(tr, "b1/ipv6"), spec.Addr(tr, "b1/ipv4")))
				syns := spec.Of(tr, trace.KindSYN)
				g.Expect(syns).NotTo(gomega.BeEmpty())
				var gap time.Duration
				for _, e := range syns {
					if e.Addr == spec.Addr(tr, "b1/ipv4") {
						gap = e.T - syns[0].T
						break
					}
				}
				g.Expect(gap).To(gomega.BeNumerically("<", 100*time.Millisecond),
					"after the IPv6 attempt failed, the IPv4 attempt should start at once, not after the 250 ms delay")
			}},
			monitor.HEFailureNextAddress.Check(),
		},
		Agreement: synAgreement,
	}
}
