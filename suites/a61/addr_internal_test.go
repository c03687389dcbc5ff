package a61

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// withAttempts is tr with its connection attempts replaced by one SYN to
// each of addrs, in this order, at the times of tr's first attempts.
func withAttempts(t *testing.T, tr *trace.Trace, addrs []string) *trace.Trace {
	t.Helper()
	syns := spec.Attempts(tr.Events)
	if len(syns) < len(addrs) {
		t.Fatalf("the trace has %d attempts, not %d", len(syns), len(addrs))
	}
	out := *tr
	out.Events = nil
	k := 0
	for _, e := range tr.Events {
		if e.Kind == trace.KindSYN || e.Kind == trace.KindRST {
			if e.Kind == trace.KindSYN && !e.Retransmit && k < len(addrs) {
				e.Addr, e.Backend, e.Peer = addrs[k], "", ""
				out.Events = append(out.Events, e)
				k++
			}
			continue
		}
		out.Events = append(out.Events, e)
	}
	return &out
}

func judgeSteps(t *testing.T, eps []scenario.Endpoint, tr *trace.Trace) verdict.Result {
	t.Helper()
	rs := verdict.Evaluate(verdict.Subject{Spec: "addr-shuffle", Doc: "A61", Mode: spec.Lab}, []verdict.Check{stepsOrder(eps)}, tr)
	if len(rs) != 1 {
		t.Fatalf("%d results", len(rs))
	}
	return rs[0]
}

// TestStepsOrder_TellsInterleavingFromNone verifies A61-ADDR-STEPS-ORDER on
// addr-shuffle's golden lab trace with its attempts put in every order a
// shuffle gives: flattened then interleaved passes, each of the six; the
// same shuffle flattened without interleaving fails, each of the six, since
// the scenario's layout makes no interleaved order also a flattened one (a
// run always tells the two apart); a pass cut short is inconclusive. On
// the layout the scenario had before, [b1/ipv4, b2/ipv4], [b3/ipv6,
// b3/ipv4], [b4/ipv6], the order b3/ipv6 b3/ipv4 b4/ipv6 b1/ipv4 b2/ipv4
// (grpc-go v1.66.2 and v1.69.4, which do not interleave, passed with it)
// is both, and inconclusive, neither a pass nor a fail.
func TestStepsOrder_TellsInterleavingFromNone(t *testing.T) {
	s := addrShuffle()
	golden, err := spec.ReadGolden(s, spec.Lab)
	if err != nil {
		t.Fatal(err)
	}
	eps := lastResolved(s)
	if r := judgeSteps(t, eps, golden); r.Verdict != verdict.Pass {
		t.Fatalf("the golden trace: %s %q", r.Label(), r.Evidence)
	}
	_, flat := shuffledOrders(golden, eps)
	if len(flat) != 6 {
		t.Fatalf("%d shuffles, want 6", len(flat))
	}
	seen := map[string]bool{}
	for _, f := range flat {
		in := interleave(f)
		seen[strings.Join(in, " ")] = true
		if slices.ContainsFunc(flat, func(o []string) bool { return slices.Equal(o, in) }) {
			t.Errorf("the layout does not discriminate: %v is interleaved and flattened", in)
		}
		if r := judgeSteps(t, eps, withAttempts(t, golden, in)); r.Verdict != verdict.Pass {
			t.Errorf("interleaved %v: %s %q, want a pass", in, r.Label(), r.Evidence)
		}
		if r := judgeSteps(t, eps, withAttempts(t, golden, f)); r.Verdict != verdict.Fail {
			t.Errorf("flattened without interleaving %v: %s %q, want a fail", f, r.Label(), r.Evidence)
		}
		if r := judgeSteps(t, eps, withAttempts(t, golden, in[:3])); r.Verdict != verdict.Inconclusive {
			t.Errorf("cut short %v: %s %q, want inconclusive", in[:3], r.Label(), r.Evidence)
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d distinct interleaved orders, want 6 (one per shuffle)", len(seen))
	}

	before := []scenario.Endpoint{
		scenario.EP("b1/ipv4", "b2/ipv4"), scenario.EP("b3/ipv6", "b3/ipv4"), scenario.EP("b4/ipv6"),
	}
	both := addrs(golden, "b3/ipv6", "b3/ipv4", "b4/ipv6", "b1/ipv4", "b2/ipv4")
	if r := judgeSteps(t, before, withAttempts(t, golden, both)); r.Verdict != verdict.Inconclusive || !strings.Contains(r.Evidence, "does not tell interleaving from none") {
		t.Errorf("the earlier layout, %v: %s %q, want inconclusive", both, r.Label(), r.Evidence)
	}
	noInterleave := addrs(golden, "b1/ipv4", "b2/ipv4", "b3/ipv6", "b3/ipv4", "b4/ipv6")
	if r := judgeSteps(t, before, withAttempts(t, golden, noInterleave)); r.Verdict != verdict.Fail {
		t.Errorf("the earlier layout, %v: %s %q, want a fail", noInterleave, r.Label(), r.Evidence)
	}
}

// TestShuffleEndpointsOnly_OnePassChance verifies what one pass over
// addr-shuffle's layout tells of A61-ADDR-SHUFFLE-ENDPOINTS-ONLY, on its
// golden lab trace's addresses: every order a shuffle of the endpoints
// gives, interleaved or not, fits; of the 720 orders a client that shuffles
// the addresses one by one makes equally likely, exactly 1 in 8 fits too
// (the figure addrlists.go and the catalogue state), so that
// endpointShuffleJudged passes make a chance pass no likelier than 1e-6.
func TestShuffleEndpointsOnly_OnePassChance(t *testing.T) {
	s := addrShuffle()
	golden, err := spec.ReadGolden(s, spec.Lab)
	if err != nil {
		t.Fatal(err)
	}
	eps := lastResolved(s)
	_, flat := shuffledOrders(golden, eps)
	for _, f := range flat {
		for _, o := range [][]string{f, interleave(f), interleave(f)[:4]} {
			if !fitsEndpointShuffle(golden, eps, o) {
				t.Errorf("%v does not fit, want it to", o)
			}
		}
	}
	var fit, all int
	var permute func(p, rest []string)
	permute = func(p, rest []string) {
		if len(rest) == 0 {
			all++
			if fitsEndpointShuffle(golden, eps, p) {
				fit++
			}
			return
		}
		for k := range rest {
			permute(append(slices.Clone(p), rest[k]), append(slices.Clone(rest[:k]), rest[k+1:]...))
		}
	}
	permute(nil, flat[0])
	if all != 720 || fit*8 != all {
		t.Errorf("%d of %d orders fit, want 1 in 8 of 720", fit, all)
	}
	if p := math.Pow(float64(fit)/float64(all), endpointShuffleJudged); p > 1e-6 {
		t.Errorf("a chance pass of %d passes has probability %g, over 1e-6", endpointShuffleJudged, p)
	}
}

// lastResolved is the endpoint list of s's last resolver update.
func lastResolved(s spec.Spec) []scenario.Endpoint {
	var eps []scenario.Endpoint
	for _, st := range s.Scenario.Steps {
		if u, ok := st.Action.(scenario.ResolverUpdate); ok {
			eps = u.Endpoints
		}
	}
	return eps
}

// TestShuffleEndpointsOnly_JudgesEveryList verifies the check on
// addr-shuffle-lists' golden lab trace: it passes; a breach in one list's
// pass (list 4's IPv4 pair b13/ipv4, b14/ipv4 tried the other way round) is
// a fail naming that list; with only endpointShuffleJudged passes usable
// (the others cut short, their last attempt dropped) it passes, with one
// fewer it is inconclusive.
func TestShuffleEndpointsOnly_JudgesEveryList(t *testing.T) {
	s := addrShuffleLists()
	golden, err := spec.ReadGolden(s, spec.Lab)
	if err != nil {
		t.Fatal(err)
	}
	judge := func(tr *trace.Trace) verdict.Result {
		t.Helper()
		rs := verdict.Evaluate(verdict.Subject{Spec: s.Scenario.Name, Doc: "A61", Mode: spec.Lab}, []verdict.Check{shuffleEndpointsOnly()}, tr)
		if len(rs) != 1 {
			t.Fatalf("%d results", len(rs))
		}
		return rs[0]
	}
	if r := judge(golden); r.Verdict != verdict.Pass {
		t.Fatalf("the golden trace: %s %q", r.Label(), r.Evidence)
	}
	a, b := spec.Addr(golden, "b13/ipv4"), spec.Addr(golden, "b14/ipv4")
	swapped := mapAttempts(golden, func(e trace.Event) (trace.Event, bool) {
		switch e.Addr {
		case a:
			e.Addr = b
		case b:
			e.Addr = a
		}
		return e, true
	})
	if r := judge(swapped); r.Verdict != verdict.Fail || !strings.Contains(r.Evidence, "list 4 ") {
		t.Errorf("list 4's IPv4 pair swapped: %s %q, want a fail naming list 4", r.Label(), r.Evidence)
	}
	// The pass needs endpointShuffleJudged usable passes: with exactly
	// that many it passes, with one fewer it is inconclusive.
	if r := judge(cutFrom(t, golden, endpointShuffleJudged)); r.Verdict != verdict.Pass {
		t.Errorf("%d passes usable: %s %q, want a pass", endpointShuffleJudged, r.Label(), r.Evidence)
	}
	if r := judge(cutFrom(t, golden, endpointShuffleJudged-1)); r.Verdict != verdict.Inconclusive {
		t.Errorf("%d passes usable: %s %q, want inconclusive", endpointShuffleJudged-1, r.Label(), r.Evidence)
	}
}

// cutFrom is tr with the passes of its lists from the k-th on (counted
// from 0) cut short, each losing its last attempt: only the first k stay
// usable.
func cutFrom(t *testing.T, tr *trace.Trace, k int) *trace.Trace {
	t.Helper()
	lists := resolvedLists(tr)
	var last []string // each list's last attempted address, for lists k on
	for ; k < len(lists); k++ {
		end := tr.Header.Scenario.End
		if k+1 < len(lists) {
			end = lists[k+1].at
		}
		mine := addrs(tr, spec.EndpointAddrs(lists[k].eps)...)
		got := order(trace.Select(attempts(tr, lists[k].at), func(e trace.Event) bool { return e.T < end && slices.Contains(mine, e.Addr) }))
		if len(got) == 0 {
			t.Fatalf("list %d: no attempt in the trace", k+1)
		}
		last = append(last, got[len(got)-1])
	}
	return mapAttempts(tr, func(e trace.Event) (trace.Event, bool) { return e, !slices.Contains(last, e.Addr) })
}

// mapAttempts is tr with each SYN and RST passed through f: replaced by
// the event f returns, or dropped when it returns false.
func mapAttempts(tr *trace.Trace, f func(trace.Event) (trace.Event, bool)) *trace.Trace {
	out := *tr
	out.Events = nil
	for _, e := range tr.Events {
		if e.Kind == trace.KindSYN || e.Kind == trace.KindRST {
			var keep bool
			if e, keep = f(e); !keep {
				continue
			}
		}
		out.Events = append(out.Events, e)
	}
	return &out
}
