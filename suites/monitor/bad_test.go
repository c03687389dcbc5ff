package monitor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// badTracesOf are the known-bad traces of monitor m: those the generator
// (suites/internal/badtrace) made for the checks that run it in a spec.
func badTracesOf(t *testing.T, m Monitor) []string {
	t.Helper()
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "bad", "*", "*.monitor-"+m.Name+".*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestMonitors_FailTheirKnownBadTraces: each monitor has a known-bad trace
// and, judged on it as `conform check` judges any trace, fails it with a
// breach of its invariant (the events that break it, not a trace that no
// longer exercises the rule).
func TestMonitors_FailTheirKnownBadTraces(t *testing.T) {
	for _, m := range All() {
		paths := badTracesOf(t, m)
		if len(paths) == 0 {
			t.Errorf("%s has no known-bad trace: add its Check to a spec that exercises it and run go run ./suites/internal/badtrace/cmd/badtraces", m.Name)
		}
		for _, p := range paths {
			tr, err := trace.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			r := m.Judge(filepath.Base(p), tr)
			if r.Verdict != verdict.Fail || r.Kind != verdict.Deviates || !strings.Contains(r.Evidence, "+") {
				t.Errorf("%s on its bad trace %s: %s, want a fail naming the events that break it:\n%s", m.Name, p, r.Label(), r.Evidence)
				continue
			}
			t.Logf("%s on %s:\n%s", m.Name, filepath.Base(p), r.Evidence)
		}
	}
}

// TestMonitorsDoc_ListsEveryMonitor: docs/monitors.md has a row for every
// monitor naming its requirement and its known-bad traces.
func TestMonitorsDoc_ListsEveryMonitor(t *testing.T) {
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "..", "docs", "monitors.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range All() {
		row := regexp.MustCompile("(?m)^\\| `?" + regexp.QuoteMeta(m.Requirement) + "`? \\| `" + regexp.QuoteMeta(m.Name) + "` \\|.*$").Find(doc)
		if row == nil {
			t.Errorf("docs/monitors.md has no row | %s | `%s` | …", m.Requirement, m.Name)
			continue
		}
		for _, p := range badTracesOf(t, m) {
			if rel, _ := filepath.Rel(dir, p); !strings.Contains(string(row), rel) {
				t.Errorf("docs/monitors.md's row for %s does not name its known-bad trace %s", m.Name, rel)
			}
		}
	}
}
