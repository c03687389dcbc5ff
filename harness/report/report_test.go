package report_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

var update = flag.Bool("update", false, "rewrite the report goldens in testdata/")

// The fixed runs the goldens are rendered from: every verdict, both modes,
// a spec without checks, evidence over several lines with characters XML
// and JSON escape.
func fixtureRuns() []report.Run {
	he := func(m trace.Mode) verdict.Subject {
		return verdict.Subject{Spec: "he-dropped-ipv6", Doc: "A61", Mode: m}
	}
	sticky := func(m trace.Mode) verdict.Subject { return verdict.Subject{Spec: "sticky-tf", Doc: "A62", Mode: m} }
	ended := func(t time.Duration) *trace.Trace { return &trace.Trace{Events: []trace.Event{{T: 0}, {T: t}}} }
	res := func(s verdict.Subject, id string, v verdict.Verdict, ev string) verdict.Result {
		return verdict.Result{Spec: s.Spec, Doc: s.Doc, Requirement: id, Mode: s.Mode, Verdict: v, Evidence: ev}
	}
	idle := verdict.Subject{Spec: "he-turn-idle", Doc: "A61", Mode: trace.ModeLab}
	named := func(r verdict.Result, check string) verdict.Result { r.Check = check; return r }
	kind := func(r verdict.Result, k verdict.Kind) verdict.Result { r.Kind = k; return r }
	const gomegaMsg = "Expected\n    <string>: b9 & \"b8\"\nto equal\n    <string>: b1"
	sim, lab := trace.ModeSim, trace.ModeLab
	return []report.Run{
		{Subject: he(sim), Trace: ended(2 * time.Second), Results: []verdict.Result{
			res(he(sim), "A61-HE-DELAY-DEFAULT", verdict.Pass, ""),
			kind(res(he(sim), "A61-HE-FIRST-PASS", verdict.Fail, gomegaMsg), verdict.Deviates),
		}},
		{Subject: he(lab), Trace: ended(1500 * time.Millisecond), Results: []verdict.Result{
			res(he(lab), "A61-HE-DELAY-DEFAULT", verdict.Pass, ""),
			res(he(lab), "A61-HE-FIRST-PASS", verdict.Pass, ""),
		}},
		{Subject: sticky(sim), Results: []verdict.Result{
			res(sticky(sim), "A62-TF-PICKS", verdict.Error, "driver: bad line 3: <eof>"),
		}},
		{Subject: sticky(lab), Trace: ended(4 * time.Second), Results: []verdict.Result{
			res(sticky(lab), "A62-TF-PICKS", verdict.NotApplicable, "the driver cannot express xDS"),
		}},
		{Subject: verdict.Subject{Spec: "all-dropped", Doc: "A61", Mode: lab}, Trace: ended(10 * time.Second)},
		{Subject: idle, Trace: ended(3 * time.Second), Results: []verdict.Result{
			named(res(idle, "A61-HE-TURN-IDLE", verdict.Inconclusive, "b1 was not IDLE at its turn: it was in TRANSIENT_FAILURE"), "connects at its turn"),
			kind(named(res(idle, "A61-HE-TURN-IDLE", verdict.Fail, "no attempt to b1 within 500ms"), "attempt follows"), verdict.Absent),
		}},
	}
}

// fixtureMatrix is two implementations' runs of the fixture, as verify
// reports them.
func fixtureMatrix() report.Matrix {
	all := fixtureRuns()
	var lab []report.Run
	for _, r := range all {
		if r.Mode == trace.ModeLab {
			lab = append(lab, r)
		}
	}
	return report.Matrix{Impls: []report.Impl{
		{Name: "grpc-go@v1.85.0", Runs: []report.Run{all[0], all[2]}, Wall: 12340 * time.Millisecond,
			Divergence: map[string]error{"he-dropped-ipv6": errors.New("first divergence at event 3:\n  golden: syn b1/ipv4\n  observed: syn b1/ipv6"), "sticky-tf": nil}},
		{Name: "grpc-js@1.14.7-with-a-long-version", Runs: lab, Wall: 2 * time.Second, Divergence: map[string]error{}},
	}}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestTable_Golden pins `conform run`'s table and JSON document for a fixed
// set of runs.
func TestTable_Golden(t *testing.T) {
	tab := report.Table{Runs: fixtureRuns(), Wall: 3250 * time.Millisecond, Parallel: 2,
		Disagree: map[string]error{"he-dropped-ipv6": errors.New("the simulator and the lab disagree:\n  syn b1/ipv4: 250ms vs 251ms")}}
	var text, js bytes.Buffer
	tab.Text(&text)
	golden(t, "run.txt", text.Bytes())
	if err := tab.JSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "run.json", js.Bytes())
	if tab.Pass() {
		t.Error("a table with a fail passed")
	}
}

// TestTable_PassOnlyWhenEveryVerdictPassesAndModesAgree verifies that
// not-applicable and a disagreement both keep `conform run` from passing.
func TestTable_PassOnlyWhenEveryVerdictPassesAndModesAgree(t *testing.T) {
	runs := fixtureRuns()
	passing := report.Table{Runs: runs[1:2], Parallel: 1}
	if !passing.Pass() {
		t.Error("a table of passes did not pass")
	}
	if (report.Table{Runs: runs[3:4], Parallel: 1}).Pass() {
		t.Error("a not-applicable verdict passed `conform run`")
	}
	passing.Disagree = map[string]error{"he-dropped-ipv6": errors.New("differ")}
	if passing.Pass() {
		t.Error("a disagreement of simulator and lab passed")
	}
}

// TestMatrix_Golden pins `conform verify`'s matrix and JSON document for
// two implementations' fixed runs, and which verdicts each --fail-on
// counts against the run.
func TestMatrix_Golden(t *testing.T) {
	m := fixtureMatrix()
	var text, js bytes.Buffer
	m.Text(&text)
	golden(t, "verify.txt", text.Bytes())
	if err := m.JSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "verify.json", js.Bytes())
	for _, tc := range []struct {
		failOn string
		want   bool
	}{{report.FailOnFail, false}, {report.FailOnError, false}, {report.FailOnNever, true}} {
		if got := m.OK(tc.failOn); got != tc.want {
			t.Errorf("OK(%q) = %v, want %v", tc.failOn, got, tc.want)
		}
	}
	onlyFails := report.Matrix{Impls: []report.Impl{{Name: "x", Runs: fixtureRuns()[:1]}}}
	if !onlyFails.OK(report.FailOnError) || onlyFails.OK(report.FailOnFail) {
		t.Error("a fail without errors: want OK for --fail-on error only")
	}
}

// TestJUnit_Golden pins the JUnit XML: one testsuite per document, one
// testcase per requirement, spec and mode.
func TestJUnit_Golden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := report.WriteJUnit(path, fixtureRuns()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "junit.xml", b)
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".junit-*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestProgress_Golden pins the progress line printed as each run finishes.
func TestProgress_Golden(t *testing.T) {
	var b bytes.Buffer
	for i, r := range fixtureRuns() {
		report.Progress(&b, r, time.Duration(i+1)*1234*time.Millisecond, i+1, 12)
	}
	golden(t, "progress.txt", b.Bytes())
}

// TestMatrix_HTML verifies the HTML data of the matrix: the catalogue's
// requirements as rows, every implementation and run, a broken run's
// reason, and a page that renders.
func TestMatrix_HTML(t *testing.T) {
	m := fixtureMatrix()
	golden := &trace.Trace{}
	m.Impls[1].Runs[0].Golden = golden
	rep := m.HTML(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	var ids []string
	for _, q := range rep.Requirements {
		ids = append(ids, q.ID)
	}
	if got := strings.Join(ids, " "); got != "A61-HE-DELAY-DEFAULT A61-HE-FIRST-PASS A61-HE-TURN-IDLE A62-TF-PICKS" {
		t.Errorf("rows %s", got)
	}
	if len(rep.Impls) != 2 || len(rep.Runs) != 6 || len(rep.Results) != 8 {
		t.Fatalf("%d impls, %d runs, %d results; want 2, 6, 8", len(rep.Impls), len(rep.Runs), len(rep.Results))
	}
	if rep.Runs[1].Err != "driver: bad line 3: <eof>" || rep.Runs[0].Err != "" {
		t.Errorf("run errors %q, %q; want the broken run's reason only", rep.Runs[0].Err, rep.Runs[1].Err)
	}
	if rep.Runs[2].Golden != golden || rep.Runs[2].Observed != m.Impls[1].Runs[0].Trace {
		t.Error("a run's golden and observed traces were not carried over")
	}
	if err := html.Render(&bytes.Buffer{}, rep); err != nil {
		t.Error(err)
	}
}

// TestOverhead_AgainstTheLeastTheScenariosAllow checks the least time the
// lab runs allow: their total over the parallelism, never less than the
// longest one, counting only as many at once as there are runs.
func TestOverhead_AgainstTheLeastTheScenariosAllow(t *testing.T) {
	lab := func(d time.Duration) report.Run {
		return report.Run{Subject: verdict.Subject{Spec: "s", Doc: "A61", Mode: trace.ModeLab},
			Trace: &trace.Trace{Events: []trace.Event{{T: 0}, {T: d}}}}
	}
	sim := report.Run{Subject: verdict.Subject{Spec: "s", Doc: "A61", Mode: trace.ModeSim},
		Trace: &trace.Trace{Events: []trace.Event{{T: 0}, {T: time.Hour}}}}
	for _, c := range []struct {
		runs     []report.Run
		wall     time.Duration
		parallel int
		want     string
	}{
		{[]report.Run{lab(10 * time.Second)}, 11 * time.Second, 2, "own time 10.0s at 1 in parallel: at best 10.0s; overhead 10%"},
		{[]report.Run{lab(8 * time.Second), lab(2 * time.Second), lab(2 * time.Second)}, 10 * time.Second, 2, "own time 12.0s at 2 in parallel: at best 8.0s; overhead 25%"},
		{[]report.Run{lab(4 * time.Second), lab(4 * time.Second), sim}, 5 * time.Second, 2, "own time 8.0s at 2 in parallel: at best 4.0s; overhead 25%"},
		{[]report.Run{sim}, time.Second, 2, ""},
	} {
		got := report.Overhead(c.runs, c.wall, c.parallel)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Overhead(%d runs, %v, -p %d) = %q, want %q", len(c.runs), c.wall, c.parallel, got, c.want)
		}
	}
}

// TestMatrix_OneCauseIsSaidOnce checks that an error every run of an
// implementation gave with the same evidence (its driver could not be
// installed) is printed once, with how many runs it covers, while an
// error of one run keeps its place.
func TestMatrix_OneCauseIsSaidOnce(t *testing.T) {
	const cause = "installing the driver: grpc-go v9.9.9 is not available from the module proxy"
	broken := func(spec, ev string, ids ...string) report.Run {
		s := verdict.Subject{Spec: spec, Doc: "A61", Mode: trace.ModeLab}
		return report.Run{Subject: s, Results: verdict.Broken(s, ids, verdict.Error, ev)}
	}
	m := report.Matrix{Impls: []report.Impl{{Name: "grpc-go@v9.9.9", Runs: []report.Run{
		broken("he-dropped-ipv6", cause, "A61-HE-DELAY-DEFAULT", "A61-HE-FIRST-PASS"),
		broken("he-refused-ipv6", cause, "A61-HE-FAILURE-NEXT-ADDRESS"),
		broken("he-turn-idle", "driver: bad line 3", "A61-HE-TURN-IDLE"),
	}}}}
	var b bytes.Buffer
	m.Text(&b)
	out := b.String()
	if n := strings.Count(out, cause); n != 1 {
		t.Errorf("the shared cause is printed %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "error in 2 runs (3 results), one cause") || !strings.Contains(out, "driver: bad line 3") {
		t.Errorf("want the shared cause counted and the single error kept:\n%s", out)
	}
}
