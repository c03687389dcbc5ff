package monitor

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// goldenTraces are the golden traces of every suite, by path relative to
// traces/.
func goldenTraces(t *testing.T) map[string]*trace.Trace {
	t.Helper()
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "a*", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden traces under %s: %v", dir, err)
	}
	out := map[string]*trace.Trace{}
	for _, p := range paths {
		tr, err := trace.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = tr
	}
	return out
}

// TestMonitors_NeverFailAGoldenTrace runs every monitor on every golden
// trace (the reference's, simulated and lab): none fails, whatever the
// scenario, and each passes at least one.
func TestMonitors_NeverFailAGoldenTrace(t *testing.T) {
	passes := map[string][]string{}
	counts := map[string]map[verdict.Verdict]int{}
	traces := goldenTraces(t)
	names := make([]string, 0, len(traces))
	for n := range traces {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, r := range JudgeAll(name, traces[name]) {
			if counts[r.Check] == nil {
				counts[r.Check] = map[verdict.Verdict]int{}
			}
			counts[r.Check][r.Verdict]++
			switch r.Verdict {
			case verdict.Fail, verdict.Error:
				t.Errorf("%s on the golden trace %s: %s\n%s", r.Check, name, r.Label(), r.Evidence)
			case verdict.Pass:
				passes[r.Check] = append(passes[r.Check], name)
			case verdict.Inconclusive:
				t.Logf("%s inconclusive on %s: %s", r.Check, name, r.Evidence)
			}
		}
	}
	for _, m := range All() {
		if len(passes[m.Name]) == 0 {
			t.Errorf("%s passes no golden trace: it judges none", m.Name)
		}
		t.Logf("%s: %v; passes %s", m.Name, counts[m.Name], strings.Join(passes[m.Name], " "))
	}
}

func init() { _ = os.Getenv }

// TestMonitors_NeverFailAGoldenSeenFromOutside judges every lab golden
// trace as a third party's would be: without the policy's own events, as
// a driver's trace is (its resolve-now the channel's, as a driver reports
// it). The reference, seen from outside, fails no monitor:
// the monitors' outside evidence (refusals, the channel's states and
// requests) says what the policy's events say, or is inconclusive.
func TestMonitors_NeverFailAGoldenSeenFromOutside(t *testing.T) {
	judged := map[string]int{}
	for name, tr := range goldenTraces(t) {
		if tr.Header.Mode != trace.ModeLab {
			continue
		}
		outside := &trace.Trace{Header: tr.Header}
		for _, e := range tr.Events {
			switch {
			case e.Source == trace.SourcePolicy && e.Kind == trace.KindResolveNow:
				// A driver reports the channel's resolver asked to
				// re-resolve, where the recorder saw the policy ask.
				e.Source = trace.SourceDriver
			case e.Source == trace.SourcePolicy:
				continue
			}
			outside.Events = append(outside.Events, e)
		}
		outside.Header.Impl = "the reference seen from outside"
		for _, r := range JudgeAll(name, outside) {
			switch r.Verdict {
			case verdict.Fail, verdict.Error:
				t.Errorf("%s on %s without the policy's events: %s\n%s", r.Check, name, r.Label(), r.Evidence)
			case verdict.Pass:
				judged[r.Check]++
			case verdict.Inconclusive:
				t.Logf("%s inconclusive on %s seen from outside: %s", r.Check, name, r.Evidence)
			}
		}
	}
	for _, m := range All() {
		if judged[m.Name] == 0 {
			t.Errorf("%s passes no lab golden trace seen from outside: it judges none", m.Name)
		}
	}
	t.Logf("passes seen from outside: %v", judged)
}
