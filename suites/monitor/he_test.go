package monitor

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// TestHEPassEndReResolve_AReactionNotAWindow: he-pass-end-reresolve on
// he-all-refused seen from outside, the channel's request moved. The
// request answers the pass's end: 23 ms after it (grpc-java's, through its
// driver) is at once for a driver whose process no stall watch shares
// (spec.ReactionWithin), and late for a client the watch shares; after an
// attempt made at once too it passes; after the client's next attempt, or
// never, it fails whatever the process.
func TestHEPassEndReResolve_AReactionNotAWindow(t *testing.T) {
	g := golden(t, "a61/he-all-refused.lab.jsonl")
	var end time.Duration
	for _, e := range g.Events {
		if e.Kind == trace.KindRST && end == 0 && e.Addr == "198.19.0.1:50051" {
			end = e.T
		}
	}
	if end == 0 {
		t.Fatal("the golden trace has no refusal of b1/ipv4")
	}
	// as a driver's trace: no policy events, no stalls, the channel's
	// request at end+after (none when after is negative).
	driver := func(after time.Duration, watch string) *trace.Trace {
		tr := *g
		tr.Header.Env = map[string]string{trace.EnvStallWatch: watch}
		tr.Events = nil
		for _, e := range g.Events {
			if e.Source == trace.SourcePolicy || e.Kind == trace.KindStall {
				continue
			}
			if after >= 0 && e.T > end+after && (len(tr.Events) == 0 || tr.Events[len(tr.Events)-1].T <= end+after) {
				tr.Events = append(tr.Events, trace.Event{T: end + after, Source: trace.SourceDriver, Kind: trace.KindResolveNow})
			}
			tr.Events = append(tr.Events, e)
		}
		return &tr
	}
	// an attempt at the end of the pass too, before the request: a
	// subchannel whose backoff was over, reconnected "at that point".
	both := driver(5*time.Millisecond, trace.StallWatchClient)
	both.Events = append(both.Events, trace.Event{T: end + time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: "[fd00:c0f::b:1]:50051", Port: 40000, Backend: "b1"})
	slices.SortStableFunc(both.Events, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
	for _, c := range []struct {
		name  string
		tr    *trace.Trace
		want  verdict.Verdict
		words string
	}{
		{"at once", driver(time.Millisecond, trace.StallWatchHarness), verdict.Pass, ""},
		{"at once, after an attempt at once", both, verdict.Pass, ""},
		{"23 ms, a driver no watch shares", driver(23*time.Millisecond, trace.StallWatchHarness), verdict.Pass, ""},
		{"23 ms, a client the watch shares", driver(23*time.Millisecond, trace.StallWatchClient), verdict.Fail, "no request at the end of the pass"},
		{"after the next attempt", driver(1100*time.Millisecond, trace.StallWatchHarness), verdict.Fail, "the client tried again before it asked"},
		{"never", driver(-1, trace.StallWatchHarness), verdict.Fail, "no request after the pass ended"},
	} {
		rs := verdict.Evaluate(verdict.Subject{}, []verdict.Check{HEPassEndReResolve.Check()}, c.tr)
		if len(rs) != 1 || rs[0].Verdict != c.want || !strings.Contains(rs[0].Evidence, c.words) {
			t.Errorf("%s: %+v, want %s with %q", c.name, rs, c.want, c.words)
		}
	}
}
