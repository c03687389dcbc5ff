package a61

import (
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/monitor"
	"github.com/conformlab/conform/suites/spec"
)

const sectionAddr = "Address List Handling in pick_first"

// isV6 reports whether a concrete address is IPv6 (spec.IsV6).
func isV6(addr string) bool { return spec.IsV6(addr) }

// addrInterleave: a custom resolver's two endpoints, the first all IPv4
// (three addresses), the second all IPv6 (two). Every address refuses but
// the last one the pass reaches, so the pass runs through the list at once
// and its order is the order of the attempts.
func addrInterleave() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionAddr,
		Scenario: scenario.New("addr-interleave").
			Describe("the client gets [b1/ipv4, b2/ipv4, b3/ipv4], [b1/ipv6, b2/ipv6]; all refuse but b3/ipv4").
			Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).Backend("b3", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b1/ipv6", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv6", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4", "b2/ipv4", "b3/ipv4"), scenario.EP("b1/ipv6", "b2/ipv6"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-ADDR-NO-RESORT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireScenarioOrder(tr)
				as := attempts(tr, 0)
				g.Expect(as).NotTo(gomega.BeEmpty())
				g.Expect(as[0].Addr).To(gomega.Equal(spec.Addr(tr, "b1/ipv4")),
					"the resolver's first address leads, although IPv6 would come first by RFC 6724")
			}},
			{Requirement: "A61-ADDR-FLATTEN", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireScenarioOrder(tr)
				// Each family keeps the order of the concatenated endpoints.
				v4, v6 := []string{}, []string{}
				for _, a := range order(attempts(tr, 0)) {
					if isV6(a) {
						v6 = append(v6, a)
					} else {
						v4 = append(v4, a)
					}
				}
				wantV4, wantV6 := addrs(tr, "b1/ipv4", "b2/ipv4", "b3/ipv4"), addrs(tr, "b1/ipv6", "b2/ipv6")
				// What was attempted keeps each family's order; a pass that
				// connected before reaching every address (b3/ipv4 accepts)
				// shows only the start of it.
				g.Expect(v4).To(gomega.Equal(wantV4[:min(len(v4), len(wantV4))]), "the IPv4 addresses in the endpoints' order")
				g.Expect(v6).To(gomega.Equal(wantV6[:min(len(v6), len(wantV6))]), "the IPv6 addresses in the endpoints' order")
				verdict.Require(len(v4) == len(wantV4) && len(v6) == len(wantV6),
					"the pass connected after %d of the 5 addresses (IPv4 %v, IPv6 %v): the order of those it never reached is unseen (without interleaving, b3/ipv4 comes before any IPv6 address)", len(v4)+len(v6), v4, v6)
			}},
			{Requirement: "A61-ADDR-INTERLEAVE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireScenarioOrder(tr)
				g.Expect(order(attempts(tr, 0))).To(gomega.Equal(addrs(tr, "b1/ipv4", "b1/ipv6", "b2/ipv4", "b2/ipv6", "b3/ipv4")),
					"families alternate from the first address's, across endpoints, until IPv6 runs out")
			}},
			monitor.HEInterleave.Check(),
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// addrDuplicate: b1/ipv6 is listed twice, in two endpoints of a mixed-family
// list. A61 is silent about duplicates; the reference keeps an address at its
// first position only (one address, one subchannel) before interleaving.
func addrDuplicate() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionAddr, Observation: true,
		Scenario: scenario.New("addr-duplicate").
			Describe("the client gets [b1/ipv6, b2/ipv6], [b1/ipv4, b1/ipv6]; all refuse but b2/ipv6").
			Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).
			LB("pick_first", `{}`).
			At(0, scenario.Fault("b1/ipv6", scenario.Reset)).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b2/ipv6"), scenario.EP("b1/ipv4", "b1/ipv6"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-ADDR-INTERLEAVE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireScenarioOrder(tr)
				// Observed: one attempt per address, the duplicate at its
				// first place, then interleaving of what is left.
				as := attempts(tr, 0)
				g.Expect(as).To(gomega.HaveLen(3), "one attempt per distinct address")
				g.Expect(order(as)).To(gomega.Equal(addrs(tr, "b1/ipv6", "b1/ipv4", "b2/ipv6")))
			}},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// addrShuffle: shuffleAddressList (A62) on three endpoints. The attempts
// must follow shuffle, then flatten, then interleave: their order is one of
// the six the endpoint permutations give, and an endpoint's two IPv4
// addresses stay together in their order.
//
// The layout is chosen so that one run tells interleaving from none: for
// none of the six shuffles is the interleaved order also the flattened
// order of some shuffle (a client that does not interleave could not have
// given it), and the six interleaved orders differ. With the earlier
// layout, [b1/ipv4, b2/ipv4], [b3/ipv6, b3/ipv4], [b4/ipv6], two shuffles
// of six (b3's endpoint first) gave b3/ipv6 b3/ipv4 b4/ipv6 b1/ipv4
// b2/ipv4, which is interleaved and also flattened without interleaving:
// a conforming client's run told nothing one time in three, and a client
// without interleaving passed one time in six (grpc-go v1.66.2 and
// v1.69.4, before it interleaved).
func addrShuffle() spec.Spec {
	eps := []scenario.Endpoint{
		scenario.EP("b1/ipv4", "b2/ipv4"), scenario.EP("b3/ipv6", "b3/ipv4"), scenario.EP("b4/ipv4", "b4/ipv6"),
	}
	return spec.Spec{
		Doc: requirement.A61, Section: sectionAddr,
		Scenario: scenario.New("addr-shuffle").
			Describe("shuffleAddressList; the client gets [b1/ipv4, b2/ipv4], [b3/ipv6, b3/ipv4], [b4/ipv4, b4/ipv6]; all refuse").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
			Backend("b3", scenario.Dual).Backend("b4", scenario.Dual).
			LB("pick_first", `{"shuffleAddressList":true}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b2/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b3/ipv6", scenario.Reset)).
			At(0, scenario.Fault("b3/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b4/ipv4", scenario.Reset)).
			At(0, scenario.Fault("b4/ipv6", scenario.Reset)).
			At(0, scenario.Resolve(eps...)).
			After(scenario.On("balancer-state").WithState("TRANSIENT_FAILURE"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			stepsOrder(eps),
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// stepsOrder is A61-ADDR-STEPS-ORDER on a client given the endpoints eps
// with shuffleAddressList on. A61, Address List Handling in pick_first:
// shuffle the endpoints (A62), flatten, then interleave the families (RFC
// 8305 section 4), in this order. The order the client tried fails the
// check when no shuffle gives it that way; it passes only when it also
// tells interleaving from none, that is when no shuffle flattened without
// interleaving gives it; otherwise the run is inconclusive.
func stepsOrder(eps []scenario.Endpoint) spec.Check {
	return spec.Check{Requirement: "A61-ADDR-STEPS-ORDER", Assert: func(g gomega.Gomega, tr *trace.Trace) {
		got := order(attempts(tr, 0))
		steps, flat := shuffledOrders(tr, eps)
		var interleaved [][]string
		for _, f := range flat {
			interleaved = append(interleaved, interleave(f))
		}
		g.Expect(prefixOfAny(got, interleaved)).To(gomega.BeTrue(),
			"not the order of any shuffle of the endpoints, flattened then interleaved: %s", symbolic(tr, got))
		verdict.Require(len(got) == len(flat[0]),
			"the pass ended after %d of the %d addresses (%s): the order of those it never reached is unseen", len(got), len(flat[0]), symbolic(tr, got))
		if i := slices.IndexFunc(flat, func(f []string) bool { return slices.Equal(f, got) }); i >= 0 {
			j := slices.IndexFunc(interleaved, func(o []string) bool { return slices.Equal(o, got) })
			verdict.Require(false, "the order tried, %s, is the shuffle %v of the endpoints flattened then interleaved, and also the shuffle %v flattened without interleaving: the run does not tell interleaving from none", symbolic(tr, got), steps[j], steps[i])
		}
	}}
}

// byFamily splits addrs into its IPv4 and its IPv6 addresses, each in
// order.
func byFamily(addrs []string) (v4, v6 []string) {
	for _, a := range addrs {
		if isV6(a) {
			v6 = append(v6, a)
		} else {
			v4 = append(v4, a)
		}
	}
	return v4, v6
}

// shuffledOrders are, for each order of the endpoints eps (a shuffle), the
// shuffle, named by the endpoints' 1-based places in the list given, and
// its addresses flattened (concatenated in order), as tr's concrete ones.
func shuffledOrders(tr *trace.Trace, eps []scenario.Endpoint) (steps [][]int, flat [][]string) {
	var permute func(p []int, rest []int)
	permute = func(p []int, rest []int) {
		if len(rest) == 0 {
			var f []string
			step := make([]int, len(p))
			for k, i := range p {
				f = append(f, addrs(tr, eps[i].Addrs...)...)
				step[k] = i + 1
			}
			steps, flat = append(steps, step), append(flat, f)
			return
		}
		for k, i := range rest {
			permute(append(slices.Clone(p), i), append(slices.Clone(rest[:k]), rest[k+1:]...))
		}
	}
	rest := make([]int, len(eps))
	for i := range rest {
		rest[i] = i
	}
	permute(nil, rest)
	return steps, flat
}

// symbolic is addrs in the scenario's terms: [b1/ipv4 b3/ipv6 …].
func symbolic(tr *trace.Trace, addrs []string) string {
	names := tr.Header.Scenario.Symbolic(runner.AddrOf)
	out := make([]string, len(addrs))
	for i, a := range addrs {
		if n, ok := names[a]; ok {
			out[i] = string(n)
		} else {
			out[i] = a
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

// prefixOfAny reports whether got is the start (or the whole) of one of
// orders.
func prefixOfAny(got []string, orders [][]string) bool {
	return slices.ContainsFunc(orders, func(o []string) bool {
		return len(got) <= len(o) && slices.Equal(o[:len(got)], got)
	})
}

// interleave is spec.Interleave.
func interleave(flat []string) []string { return spec.Interleave(flat) }
