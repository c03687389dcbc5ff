package a61

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// A61-ADDR-SHUFFLE-ENDPOINTS-ONLY on many lists. One pass over addr-shuffle's
// layout cannot tell a shuffle of the endpoints from a shuffle of the
// addresses one by one: the second gives an order the first could have given
// with probability 1/8 (TestShuffleEndpointsOnly_OnePassChance). So the
// client is given endpointShuffleLists fresh lists of that layout, one every
// endpointShuffleListPeriod, every address refusing, and each list's pass is
// judged: a breach in any pass is a fail, and a pass of the check needs
// endpointShuffleJudged usable passes without one. A client that shuffles
// addresses one by one, uniformly, passes that with probability at most
// (1/8)^endpointShuffleJudged = 4.8e-7 (exactly that when only
// endpointShuffleJudged passes are usable, (1/8)^10 when all are); a client
// that shuffles endpoints never fails it. Fresh lists, because a list
// given again can meet subchannels the client kept (uniform.go in
// suites/a62 says how grpc-js's pool does that).
//
// A client that tries a new list only when its subchannel's backoff ends
// (grpc-go v1.64 to v1.71, whose pick_first keeps one subchannel for the
// whole list) makes two usable passes of ten: inconclusive. Lists far
// enough apart for it would be further apart than its growing backoffs,
// some 40 s for seven passes; the check leaves those releases unjudged
// rather than stretch every run.
const (
	endpointShuffleLists      = 10
	endpointShuffleJudged     = 7
	endpointShuffleListPeriod = 150 * time.Millisecond
)

// endpointShuffleLayout is list k (from 0) of addrShuffleLists: addr-shuffle's
// layout on backends of its own, b{4k+1} … b{4k+4}; the first two are IPv4
// only, the others dual-stack.
func endpointShuffleLayout(k int) []scenario.Endpoint {
	b := func(i int) string { return fmt.Sprintf("b%d", 4*k+i) }
	a := func(i int, family string) scenario.Addr { return scenario.Addr(b(i) + "/" + family) }
	return []scenario.Endpoint{
		scenario.EP(a(1, "ipv4"), a(2, "ipv4")), scenario.EP(a(3, "ipv6"), a(3, "ipv4")), scenario.EP(a(4, "ipv4"), a(4, "ipv6")),
	}
}

// endpointShuffleListAt is when list k is given.
func endpointShuffleListAt(k int) time.Duration {
	return endpointShuffleListPeriod * time.Duration(k+1)
}

// addrShuffleLists: shuffleAddressList over endpointShuffleLists fresh lists
// of addr-shuffle's layout, each address refusing from half a period before
// its list.
func addrShuffleLists() spec.Spec {
	b := scenario.New("addr-shuffle-lists").
		Describe(fmt.Sprintf("shuffleAddressList; %d fresh lists, one every %v, each [b1/ipv4, b2/ipv4], [b3/ipv6, b3/ipv4], [b4/ipv4, b4/ipv6] on backends of its own; all refuse",
			endpointShuffleLists, endpointShuffleListPeriod)).
		LB("pick_first", `{"shuffleAddressList":true}`)
	for k := range endpointShuffleLists {
		eps := endpointShuffleLayout(k)
		for i, stack := range []scenario.Stack{scenario.IPv4Only, scenario.IPv4Only, scenario.Dual, scenario.Dual} {
			b.Backend(fmt.Sprintf("b%d", 4*k+i+1), stack)
		}
		for _, a := range spec.EndpointAddrs(eps) {
			b.At(endpointShuffleListAt(k)-endpointShuffleListPeriod/2, scenario.Fault(a, scenario.Reset))
		}
		b.At(endpointShuffleListAt(k), scenario.Resolve(eps...))
	}
	return spec.Spec{
		Doc: requirement.A61, Section: sectionAddr,
		Scenario: b.End(endpointShuffleListAt(endpointShuffleLists-1) + 2*endpointShuffleListPeriod).MustBuild(),
		Checks:   []spec.Check{shuffleEndpointsOnly()},
	}
}

// shuffleEndpointsOnly is A61-ADDR-SHUFFLE-ENDPOINTS-ONLY, judged on each
// list of addrShuffleLists. A61, Address List Handling in pick_first: the
// shuffle "will change the order of the endpoints but will not touch the
// order of the addresses within each endpoint", and interleaving keeps each
// family's order of the flattened list. So in each pass each family's
// attempts are in the order one shuffle of the endpoints, flattened, gives
// that family, the same shuffle for both, whatever the interleaving. A pass
// is usable when every address of its list was attempted before the next
// list came.
func shuffleEndpointsOnly() spec.Check {
	return spec.Check{Requirement: "A61-ADDR-SHUFFLE-ENDPOINTS-ONLY", Assert: func(g gomega.Gomega, tr *trace.Trace) {
		lists := resolvedLists(tr)
		usable := 0
		var unusable []string
		for k, l := range lists {
			end := tr.Header.Scenario.End
			if k+1 < len(lists) {
				end = lists[k+1].at
			}
			eps := l.eps
			mine := addrs(tr, spec.EndpointAddrs(eps)...)
			got := order(trace.Select(attempts(tr, l.at), func(e trace.Event) bool {
				return e.T < end && slices.Contains(mine, e.Addr)
			}))
			v4, v6 := byFamily(got)
			g.Expect(fitsEndpointShuffle(tr, eps, got)).To(gomega.BeTrue(),
				"list %d (at %v): the attempts, IPv4 %s and IPv6 %s, are not in the order any shuffle of the endpoints, flattened, gives each family: the shuffle moved addresses inside an endpoint, or across it",
				k+1, l.at, symbolic(tr, v4), symbolic(tr, v6))
			if len(got) < len(mine) {
				unusable = append(unusable, fmt.Sprintf("list %d: %d of %d addresses attempted before the next list", k+1, len(got), len(mine)))
				continue
			}
			usable++
		}
		verdict.Require(usable >= endpointShuffleJudged,
			"%d passes tried every address of their list, fewer than the %d that make a pass of this check by chance no likelier than 1e-6 (%s)", usable, endpointShuffleJudged, strings.Join(unusable, "; "))
	}}
}

// fitsEndpointShuffle reports whether each family's attempts in got are in
// the order, or the start of the order, that one shuffle of eps, flattened,
// gives that family.
func fitsEndpointShuffle(tr *trace.Trace, eps []scenario.Endpoint, got []string) bool {
	_, flat := shuffledOrders(tr, eps)
	v4, v6 := byFamily(got)
	return slices.ContainsFunc(flat, func(f []string) bool {
		f4, f6 := byFamily(f)
		return prefixOfAny(v4, [][]string{f4}) && prefixOfAny(v6, [][]string{f6})
	})
}

// resolvedList is one resolver update of tr's scenario: when it was given,
// and its endpoints.
type resolvedList struct {
	at  time.Duration
	eps []scenario.Endpoint
}

// resolvedLists are tr's scenario's timed resolver updates, in timeline
// order (a scenario's timed steps never go back in time).
func resolvedLists(tr *trace.Trace) []resolvedList {
	var out []resolvedList
	for _, st := range tr.Header.Scenario.Steps {
		if u, ok := st.Action.(scenario.ResolverUpdate); ok && st.After == nil {
			out = append(out, resolvedList{at: st.At, eps: u.Endpoints})
		}
	}
	return out
}
