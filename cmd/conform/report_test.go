package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

var update = flag.Bool("update", false, "rewrite the report goldens in testdata/")

// The fixed outcomes the report goldens are rendered from: every verdict,
// both modes, a spec without checks, evidence over several lines with
// characters XML and JSON escape.
func fixtureOutcomes() []spec.Outcome {
	he := spec.Spec{Doc: requirement.A61, Scenario: &scenario.Scenario{Name: "he-dropped-ipv6"}}
	sticky := spec.Spec{Doc: requirement.A62, Scenario: &scenario.Scenario{Name: "sticky-tf"}}
	obs := spec.Spec{Doc: requirement.A61, Scenario: &scenario.Scenario{Name: "all-dropped"}, Observation: true}
	ended := func(t time.Duration) *trace.Trace { return &trace.Trace{Events: []trace.Event{{T: 0}, {T: t}}} }
	res := func(s spec.Spec, m trace.Mode, id string, v verdict.Verdict, ev string) verdict.Result {
		return verdict.Result{Spec: s.Name(), Doc: string(s.Doc), Requirement: id, Mode: m, Verdict: v, Evidence: ev}
	}
	const gomegaMsg = "Expected\n    <string>: b9 & \"b8\"\nto equal\n    <string>: b1"
	return []spec.Outcome{
		{Spec: he, Mode: spec.Sim, Trace: ended(2 * time.Second), Results: []verdict.Result{
			res(he, spec.Sim, "A61-HE-DELAY-DEFAULT", verdict.Pass, ""),
			res(he, spec.Sim, "A61-HE-FIRST-PASS", verdict.Fail, gomegaMsg),
		}},
		{Spec: he, Mode: spec.Lab, Trace: ended(1500 * time.Millisecond), Results: []verdict.Result{
			res(he, spec.Lab, "A61-HE-DELAY-DEFAULT", verdict.Pass, ""),
			res(he, spec.Lab, "A61-HE-FIRST-PASS", verdict.Pass, ""),
		}},
		{Spec: sticky, Mode: spec.Sim, Results: []verdict.Result{
			res(sticky, spec.Sim, "A62-TF-PICKS", verdict.Error, "driver: bad line 3: <eof>"),
		}},
		{Spec: sticky, Mode: spec.Lab, Trace: ended(4 * time.Second), Results: []verdict.Result{
			res(sticky, spec.Lab, "A62-TF-PICKS", verdict.NotApplicable, "the driver cannot express xDS"),
		}},
		{Spec: obs, Mode: spec.Lab, Trace: ended(10 * time.Second)},
	}
}

// fixtureImplRuns are two implementations' runs of the fixture, as verify
// reports them.
func fixtureImplRuns() []*implRun {
	all := fixtureOutcomes()
	var lab []spec.Outcome
	for _, o := range all {
		if o.Mode == spec.Lab {
			lab = append(lab, o)
		}
	}
	broken := []spec.Outcome{all[0], all[2]}
	return []*implRun{
		{impl: driver.Impl{Name: driver.GRPCGo, Version: "v1.85.0"}, outcomes: broken, wall: 12340 * time.Millisecond,
			golden: map[string]error{"he-dropped-ipv6": errors.New("first divergence at event 3:\n  golden: syn b1/ipv4\n  observed: syn b1/ipv6"), "sticky-tf": nil}},
		{impl: driver.Impl{Name: driver.GRPCJS, Version: "1.14.7-with-a-long-version"}, outcomes: lab, wall: 2 * time.Second,
			golden: map[string]error{}},
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
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

func indentedJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRunReport_Golden pins `conform run`'s table and JSON document for a
// fixed set of outcomes.
func TestRunReport_Golden(t *testing.T) {
	disagree := map[string]error{"he-dropped-ipv6": errors.New("the simulator and the lab disagree:\n  syn b1/ipv4: 250ms vs 251ms")}
	rep := newReport(fixtureOutcomes(), disagree, 3250*time.Millisecond, 2)
	var text bytes.Buffer
	rep.print(&text)
	golden(t, "run.txt", text.Bytes())
	golden(t, "run.json", indentedJSON(t, rep.json()))
	if rep.allPass() {
		t.Error("a report with a fail passed")
	}
}

// TestVerifyReport_Golden pins `conform verify`'s matrix and JSON document
// for two implementations' fixed outcomes.
func TestVerifyReport_Golden(t *testing.T) {
	m := newMatrix(fixtureImplRuns())
	var text bytes.Buffer
	m.print(&text)
	golden(t, "verify.txt", text.Bytes())
	golden(t, "verify.json", indentedJSON(t, m.json()))
	for _, tc := range []struct {
		failOn string
		want   bool
	}{{"fail", false}, {"error", false}, {"never", true}} {
		if got := m.ok(tc.failOn); got != tc.want {
			t.Errorf("ok(%q) = %v, want %v", tc.failOn, got, tc.want)
		}
	}
}

// TestJUnit_Golden pins the JUnit XML: one testsuite per document, one
// testcase per requirement, spec and mode.
func TestJUnit_Golden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := writeJUnit(path, fixtureOutcomes()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "junit.xml", b)
}

// TestProgress_Golden pins the progress line printed as each run finishes.
func TestProgress_Golden(t *testing.T) {
	var b bytes.Buffer
	p := progress(&b)
	for i, o := range fixtureOutcomes() {
		p(o, time.Duration(i+1)*1234*time.Millisecond, i+1, 12)
	}
	golden(t, "progress.txt", b.Bytes())
}
