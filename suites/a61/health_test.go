package a61_test

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

// TestHealthChecks_NotHeardYetIsInconclusive verifies, on
// health-one-unhealthy's golden lab trace, that the RPCs a health change
// steers are judged only once the backend had sent the client that change
// (health-sent) a reaction's slack before them: with b1's NOT_SERVING sent
// only just before u1 (as a loaded machine could make it), the check of
// the u RPCs is inconclusive, even with u1 served by b1, never a fail; and
// with no NOT_SERVING sent at all (the client watched no health) it fails.
func TestHealthChecks_NotHeardYetIsInconclusive(t *testing.T) {
	s := specNamed(t, "health-one-unhealthy")
	golden, err := spec.ReadGolden(s, spec.Lab)
	if err != nil {
		t.Fatal(err)
	}
	judge := func(tr *trace.Trace) verdict.Result {
		t.Helper()
		for _, r := range spec.Judge(s, spec.Lab, tr, nil).Results {
			if r.Requirement == "A61-HEALTH-WATCH-CHOSEN" {
				return r
			}
		}
		t.Fatal("no result for A61-HEALTH-WATCH-CHOSEN")
		return verdict.Result{}
	}
	if r := judge(golden); r.Verdict != verdict.Pass {
		t.Fatalf("the golden trace: %s %q", r.Label(), r.Evidence)
	}
	var u1 time.Duration
	for _, e := range golden.Events {
		if e.Kind == trace.KindRPCStart && e.RPC == "u1" {
			u1 = e.T
		}
	}
	late, none := *golden, *golden
	late.Events, none.Events = nil, nil
	for _, e := range golden.Events {
		switch {
		case e.Kind == trace.KindHealthSent && e.State == "TRANSIENT_FAILURE":
			none.Events = append(none.Events, trace.Event{T: e.T, Source: trace.SourceHarness, Kind: trace.KindNote, Detail: "dropped"})
			e.T = u1 - time.Millisecond
		case e.Kind == trace.KindRPCResult && e.RPC == "u1":
			e.Backend = "b1"
		}
		late.Events = append(late.Events, e)
		if e.Kind != trace.KindHealthSent || e.State != "TRANSIENT_FAILURE" {
			none.Events = append(none.Events, e)
		}
	}
	slices.SortStableFunc(late.Events, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
	if r := judge(&late); r.Verdict != verdict.Inconclusive || !strings.Contains(r.Evidence, "may not have heard of it yet") {
		t.Errorf("NOT_SERVING sent 1 ms before u1: %s %q, want inconclusive", r.Label(), r.Evidence)
	}
	if r := judge(&none); r.Verdict != verdict.Fail {
		t.Errorf("NOT_SERVING never sent: %s %q, want a fail", r.Label(), r.Evidence)
	}
}
