package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// TestStaleJobs_MissingOrEditedScenario verifies record --stale's choice:
// a spec whose golden trace is missing, or holds another version of its
// scenario, is recorded; one whose golden holds its scenario as it is now
// is not.
func TestStaleJobs_MissingOrEditedScenario(t *testing.T) {
	f := &runFlags{suite: "a62"}
	jobs, err := f.jobs([]trace.Mode{spec.Sim})
	if err != nil || len(jobs) < 3 {
		t.Fatalf("jobs: %v (%d), want at least three specs", err, len(jobs))
	}
	jobs = jobs[:3] // the first's golden as it is, the second's edited, the third's missing
	src, err := (&runFlags{}).tracesDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyGolden := func(j spec.Job, edit func(*trace.Trace)) {
		tr, err := trace.ReadFile(spec.GoldenPath(src, j.Spec, j.Mode))
		if err != nil {
			t.Fatal(err)
		}
		edit(tr)
		if err := os.MkdirAll(filepath.Dir(spec.GoldenPath(dir, j.Spec, j.Mode)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := spec.WriteGolden(dir, j.Spec, j.Mode, tr); err != nil {
			t.Fatal(err)
		}
	}
	copyGolden(jobs[0], func(*trace.Trace) {})
	copyGolden(jobs[1], func(tr *trace.Trace) {
		s := *tr.Header.Scenario
		s.Description += " (an older version)"
		tr.Header.Scenario = &s
	})
	got := map[string]bool{}
	for _, j := range staleJobs(dir, jobs) {
		got[j.Spec.Name()] = true
	}
	if got[jobs[0].Spec.Name()] {
		t.Errorf("%s: its golden holds its scenario as it is, yet it is stale", jobs[0].Spec.Name())
	}
	for _, j := range jobs[1:] {
		if !got[j.Spec.Name()] {
			t.Errorf("%s: its golden is missing or holds an edited scenario, yet it is not stale", j.Spec.Name())
		}
	}
}
