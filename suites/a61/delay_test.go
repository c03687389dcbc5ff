package a61_test

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/spec"
)

// specNamed is a61's spec called name.
func specNamed(t *testing.T, name string) spec.Spec {
	t.Helper()
	for _, s := range a61.Specs() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no spec %s", name)
	return spec.Spec{}
}

// delayDefault is the verdict of he-dropped-ipv6's A61-HE-DELAY-DEFAULT on tr.
func delayDefault(t *testing.T, s spec.Spec, tr *trace.Trace) verdict.Result {
	t.Helper()
	var got []verdict.Result
	for _, r := range spec.Judge(s, spec.Lab, tr, nil).Results {
		if r.Requirement == "A61-HE-DELAY-DEFAULT" {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d results for A61-HE-DELAY-DEFAULT, want 1: %+v", len(got), got)
	}
	return got[0]
}

// TestDelayCheck_StallInsideIsInconclusiveAndA270msDelayFails verifies, on
// he-dropped-ipv6's golden lab trace, that the lab judges the Connection
// Attempt Delay to spec.LabTimer for a client in conform's process: moved
// 20 ms later (a 270 ms delay) the IPv4 attempt fails the check; with a
// stall of the machine recorded inside the delay the check is inconclusive,
// for 250 ms and 270 ms alike (never a fail, never a pass); a client in a
// driver process is judged to spec.LabTimerDriver, which a 270 ms delay
// does not exceed.
func TestDelayCheck_StallInsideIsInconclusiveAndA270msDelayFails(t *testing.T) {
	s := specNamed(t, "he-dropped-ipv6")
	golden, err := spec.ReadGolden(s, spec.Lab)
	if err != nil {
		t.Fatal(err)
	}
	v4 := spec.Addr(golden, "b1/ipv4")
	variant := func(watch string, later time.Duration, stall bool) *trace.Trace {
		tr := &trace.Trace{Header: golden.Header}
		tr.Header.Env = map[string]string{trace.EnvStallWatch: watch}
		shift := time.Duration(0)
		for _, e := range golden.Events {
			if e.Kind == trace.KindSYN && e.Addr == v4 && shift == 0 {
				shift = later // the IPv4 attempt and all after it
			}
			e.T += shift
			tr.Events = append(tr.Events, e)
		}
		if stall {
			tr.Events = append(tr.Events, trace.Event{T: 120 * time.Millisecond, Source: trace.SourceHarness, Kind: trace.KindStall, Duration: 37 * time.Millisecond})
		}
		slices.SortStableFunc(tr.Events, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
		return tr
	}
	const delay270 = 20 * time.Millisecond
	for _, c := range []struct {
		name  string
		tr    *trace.Trace
		want  verdict.Verdict
		words string
	}{
		{"250 ms", variant(trace.StallWatchClient, 0, false), verdict.Pass, ""},
		{"270 ms", variant(trace.StallWatchClient, delay270, false), verdict.Fail, "off by 20."},
		{"250 ms, a stall inside", variant(trace.StallWatchClient, 0, true), verdict.Inconclusive, "the machine stalled 37ms at +120.0ms, inside the 250 ms Connection Attempt Delay judged"},
		{"270 ms, a stall inside", variant(trace.StallWatchClient, delay270, true), verdict.Inconclusive, "the machine stalled 37ms"},
		{"270 ms, a driver", variant(trace.StallWatchHarness, delay270, false), verdict.Pass, ""},
	} {
		r := delayDefault(t, s, c.tr)
		if r.Verdict != c.want || !strings.Contains(r.Evidence, c.words) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, r.Verdict, r.Evidence, c.want, c.words)
		}
	}
}
