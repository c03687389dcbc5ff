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

// TestHEReResolvePerRound_MergedByTheChannel: he-reresolve-per-round on
// he-all-refused seen from outside, with a second round of failures 1 ms
// after the first (grpc-js 1.11 and 1.12 retry so). A channel that spaces
// resolutions with a backoff (grpc-js: 1 s) holds the requests of rounds
// that end within it and makes one resolution when it ends: one request
// for both rounds 20 ms later, less than 1.2 s after the pass's, is
// inconclusive, never a fail; a request of its own for each round passes;
// none after the pass's fails; one for both rounds with no request in the
// 1.2 s before them (no backoff to hold them) fails.
func TestHEReResolvePerRound_MergedByTheChannel(t *testing.T) {
	g := golden(t, "a61/he-all-refused.lab.jsonl")
	v6, v4 := "[fd00:c0f::b:1]:50051", "198.19.0.1:50051"
	var passEnd, roundEnd time.Duration
	for _, e := range g.Events {
		if e.Kind == trace.KindRST && e.Addr == v4 && passEnd == 0 {
			passEnd = e.T
		}
		if e.Kind == trace.KindRST && e.Addr == v6 && passEnd > 0 && e.T > passEnd {
			roundEnd = e.T
		}
	}
	if passEnd == 0 || roundEnd == 0 {
		t.Fatal("the golden trace has no failed pass and round after it")
	}
	// as a driver's trace: no policy events, no stalls; a second round
	// 1 ms after the first; the channel's requests at requests.
	driver := func(requests ...time.Duration) *trace.Trace {
		tr := *g
		tr.Header.Env = map[string]string{trace.EnvStallWatch: trace.StallWatchHarness}
		tr.Events = nil
		for _, e := range g.Events {
			if e.Source == trace.SourcePolicy || e.Kind == trace.KindStall {
				continue
			}
			tr.Events = append(tr.Events, e)
		}
		for i, a := range []string{v4, v6} {
			at := roundEnd + time.Duration(2*i+1)*500*time.Microsecond
			tr.Events = append(tr.Events,
				trace.Event{T: at, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: a, Port: 41000 + i, Backend: "b1"},
				trace.Event{T: at + 30*time.Microsecond, Source: trace.SourceCapture, Kind: trace.KindRST, Addr: a, Port: 41000 + i, Backend: "b1"})
		}
		for _, r := range requests {
			tr.Events = append(tr.Events, trace.Event{T: r, Source: trace.SourceDriver, Kind: trace.KindResolveNow})
		}
		slices.SortStableFunc(tr.Events, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
		return &tr
	}
	second := roundEnd + 1530*time.Microsecond
	for _, c := range []struct {
		name  string
		tr    *trace.Trace
		want  verdict.Verdict
		words string
	}{
		{"one request each", driver(passEnd+100*time.Microsecond, roundEnd+100*time.Microsecond, second+100*time.Microsecond), verdict.Pass, ""},
		{"one for both, within the channel's backoff", driver(passEnd+100*time.Microsecond, roundEnd+20*time.Millisecond), verdict.Inconclusive, "merged by the channel"},
		{"none after the pass's", driver(passEnd + 100*time.Microsecond), verdict.Fail, "round 1 of failures ended without a re-resolution of its own"},
		{"one for both, no backoff to hold them", driver(roundEnd + 20*time.Millisecond), verdict.Fail, "round 1 of failures ended without a re-resolution of its own"},
	} {
		rs := verdict.Evaluate(verdict.Subject{}, []verdict.Check{HEReResolvePerRound.Check()}, c.tr)
		if len(rs) != 1 || rs[0].Verdict != c.want || !strings.Contains(rs[0].Evidence, c.words) {
			t.Errorf("%s: %+v, want %s with %q", c.name, rs, c.want, c.words)
		}
	}
}
