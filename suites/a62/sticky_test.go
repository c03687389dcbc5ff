package a62

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// TestTFPicks_ReadyReportMayLag verifies A62-TF-PICKS's check of r2 (wait
// for ready, answered only once READY) on tf-picks-fail-fast's golden lab
// trace seen as a driver's: with the driver's READY report 0.13 ms after
// r2's result (grpc-go v1.82.1 through the Go driver, whose watcher wakes
// after the change) the report may lag the channel, and the check is
// inconclusive; with it 100 ms after, r2 beat READY, a fail; before it, a
// pass.
func TestTFPicks_ReadyReportMayLag(t *testing.T) {
	s := tfPicksFailFast()
	golden, err := spec.ReadGolden(s, spec.Lab)
	if err != nil {
		t.Fatal(err)
	}
	var r2 time.Duration
	for _, e := range golden.Events {
		if e.Kind == trace.KindRPCResult && e.RPC == "r2" {
			r2 = e.T
		}
	}
	// as a driver's trace, READY reported at r2's result plus lag.
	driver := func(lag time.Duration) *trace.Trace {
		tr := *golden
		tr.Header.Env = map[string]string{trace.EnvStallWatch: trace.StallWatchClient}
		tr.Events = nil
		for _, e := range golden.Events {
			if e.Source == trace.SourcePolicy || e.Kind == trace.KindStall {
				continue
			}
			if e.Kind == trace.KindChannelState && e.State == ready {
				e.T = r2 + lag
			}
			tr.Events = append(tr.Events, e)
		}
		slices.SortStableFunc(tr.Events, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
		return &tr
	}
	judge := func(tr *trace.Trace) verdict.Result {
		t.Helper()
		var got []verdict.Result
		for _, r := range spec.Judge(s, spec.Lab, tr, nil).Results {
			if r.Requirement == "A62-TF-PICKS" && r.Check == "#2" {
				got = append(got, r)
			}
		}
		if len(got) != 1 {
			t.Fatalf("%d results of A62-TF-PICKS #2", len(got))
		}
		return got[0]
	}
	for _, c := range []struct {
		name  string
		lag   time.Duration
		want  verdict.Verdict
		words string
	}{
		{"READY reported before r2's result", -100 * time.Microsecond, verdict.Pass, ""},
		{"READY reported 0.13 ms after", 130 * time.Microsecond, verdict.Inconclusive, "the report may lag the channel"},
		{"READY reported 100 ms after", 100 * time.Millisecond, verdict.Fail, "r2 should be answered only once READY"},
	} {
		if r := judge(driver(c.lag)); r.Verdict != c.want || !strings.Contains(r.Evidence, c.words) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, r.Label(), r.Evidence, c.want, c.words)
		}
	}
}
