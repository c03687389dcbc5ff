package mutate

import (
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// twoLists is a run over two lists of three refusing endpoints, each tried
// one at a time: the first pass shuffled (c, a, b), the second in order.
func twoLists() *trace.Trace {
	s := scenario.New("two-lists").LB("pick_first", `{"shuffleAddressList": true}`).End(time.Second).MustBuild()
	const a, b, c = "198.19.0.1:50051", "198.19.0.2:50051", "198.19.0.3:50051"
	const d, e, f = "198.19.0.4:50051", "198.19.0.5:50051", "198.19.0.6:50051"
	ms := time.Millisecond
	var evs []trace.Event
	pass := func(at time.Duration, list, order []string) {
		evs = append(evs, trace.Event{T: at, Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: [][]string{{list[0]}, {list[1]}, {list[2]}}})
		for i, x := range order {
			t := at + time.Duration(i+1)*ms
			evs = append(evs,
				trace.Event{T: t, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: x},
				trace.Event{T: t + ms/2, Source: trace.SourceCapture, Kind: trace.KindRST, Addr: x})
		}
	}
	pass(0, []string{a, b, c}, []string{c, a, b})
	pass(40*ms, []string{d, e, f}, []string{d, e, f})
	return &trace.Trace{Header: trace.NewHeader(s, "reference", trace.ModeSim, 1), Events: evs}
}

// TestUnshuffle_PutsEveryPassInItsListsOrder verifies that the shuffled
// pass is put in its list's order, each attempt keeping its time and its
// refusal, and that a pass already in order is left as it was.
func TestUnshuffle_PutsEveryPassInItsListsOrder(t *testing.T) {
	out := apply(t, twoLists(), "unshuffle[1]")
	var got []string
	for _, e := range trace.Select(out.Events, trace.FromSource(trace.SourceCapture)) {
		got = append(got, e.String())
	}
	want := []string{
		"+1.0ms capture syn 198.19.0.1:50051", "+1.5ms capture rst 198.19.0.1:50051",
		"+2.0ms capture syn 198.19.0.2:50051", "+2.5ms capture rst 198.19.0.2:50051",
		"+3.0ms capture syn 198.19.0.3:50051", "+3.5ms capture rst 198.19.0.3:50051",
		"+41.0ms capture syn 198.19.0.4:50051", "+41.5ms capture rst 198.19.0.4:50051",
		"+42.0ms capture syn 198.19.0.5:50051", "+42.5ms capture rst 198.19.0.5:50051",
		"+43.0ms capture syn 198.19.0.6:50051", "+43.5ms capture rst 198.19.0.6:50051",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	in := twoLists()
	in.Events = in.Events[7:] // the second list alone, in order already
	if cands := unshuffle.candidates(in); len(cands) != 0 {
		t.Errorf("a trace whose passes are in order has candidates %v", cands)
	}
}

// TestDropAllAttempts_LeavesNoAttempt verifies that every attempt and its
// refusal go, and the harness's updates stay.
func TestDropAllAttempts_LeavesNoAttempt(t *testing.T) {
	out := apply(t, twoLists(), "drop-all-attempts[6]")
	if left := trace.Select(out.Events, trace.FromSource(trace.SourceCapture)); len(left) != 0 {
		t.Errorf("left %q", render(left))
	}
	if ups := trace.Select(out.Events, trace.OfKind(trace.KindResolverUpdate)); len(ups) != 2 {
		t.Errorf("%d resolver updates left, want 2", len(ups))
	}
}
