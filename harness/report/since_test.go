package report_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/harness/verdict"
)

// column is one release's runs: one result per requirement, its verdict as given.
func column(name string, verdicts map[string]verdict.Verdict) report.Impl {
	run := report.Run{Subject: verdict.Subject{Spec: "he-dropped-ipv6", Doc: "A61", Mode: "lab"}, Impl: name}
	for _, id := range []string{"A61-HE-FIRST-PASS", "A61-HE-TURN-IDLE", "A61-HE-DELAY-DEFAULT", "A61-HE-PASS-END-TF"} {
		if v, ok := verdicts[id]; ok {
			r := verdict.Result{Spec: run.Spec, Doc: "A61", Requirement: id, Mode: "lab", Verdict: v}
			if v == verdict.Fail {
				r.Kind, r.Evidence = verdict.Absent, "no second attempt"
			}
			run.Results = append(run.Results, r)
		}
	}
	return report.Impl{Name: name, Runs: []report.Run{run}}
}

// sinceMatrix has grpc-go at four releases, given out of order, and one
// grpc-js release (no since view for it: one release is no history).
func sinceMatrix() report.Matrix {
	const p, f, na, inc = verdict.Pass, verdict.Fail, verdict.NotApplicable, verdict.Inconclusive
	return report.Matrix{Impls: []report.Impl{
		column("grpc-go@v1.60.1", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": p, "A61-HE-TURN-IDLE": f, "A61-HE-DELAY-DEFAULT": inc, "A61-HE-PASS-END-TF": f}),
		column("grpc-go@v1.55.1", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": f, "A61-HE-TURN-IDLE": p, "A61-HE-DELAY-DEFAULT": na, "A61-HE-PASS-END-TF": f}),
		column("grpc-js@1.14.7", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": p}),
		column("grpc-go@v1.9.0", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": f, "A61-HE-TURN-IDLE": p, "A61-HE-PASS-END-TF": f}),
		column("grpc-go@v1.85.0", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": p, "A61-HE-TURN-IDLE": p, "A61-HE-DELAY-DEFAULT": f, "A61-HE-PASS-END-TF": f}),
	}}
}

// TestSince_FirstPassAndRegressions verifies the since view: releases in
// semantic-version order (v1.9.0 before v1.55.1), the first pass, a
// regression where a pass is followed by a fail (also across releases that
// did not judge it), and "never".
func TestSince_FirstPassAndRegressions(t *testing.T) {
	ss := sinceMatrix().Since()
	if len(ss) != 1 || ss[0].Impl != "grpc-go" {
		t.Fatalf("since views: %+v; want one, grpc-go's", ss)
	}
	s := ss[0]
	if want := []string{"v1.9.0", "v1.55.1", "v1.60.1", "v1.85.0"}; !slices.Equal(s.Versions, want) {
		t.Errorf("versions %v, want %v", s.Versions, want)
	}
	want := map[string]struct {
		first     string
		regressed []string
	}{
		"A61-HE-FIRST-PASS":    {"v1.60.1", []string{}},
		"A61-HE-TURN-IDLE":     {"v1.9.0", []string{"v1.60.1"}},
		"A61-HE-DELAY-DEFAULT": {"never", []string{}},
		"A61-HE-PASS-END-TF":   {"never", []string{}},
	}
	if len(s.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(s.Rows), len(want))
	}
	for _, r := range s.Rows {
		first := "never"
		if r.FirstPass != nil {
			first = *r.FirstPass
		}
		w := want[r.Requirement]
		if first != w.first || !slices.Equal(r.Regressed, w.regressed) {
			t.Errorf("%s: first pass %s, regressed %v; want %s, %v", r.Requirement, first, r.Regressed, w.first, w.regressed)
		}
	}
}

// TestSince_RegressionAcrossAnUnjudgedRelease: pass, inconclusive, fail is
// a regression at the fail.
func TestSince_RegressionAcrossAnUnjudgedRelease(t *testing.T) {
	m := report.Matrix{Impls: []report.Impl{
		column("grpc-js@1.8.21", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": verdict.Pass}),
		column("grpc-js@1.9.15", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": verdict.Inconclusive}),
		column("grpc-js@1.10.1", map[string]verdict.Verdict{"A61-HE-FIRST-PASS": verdict.Fail}),
	}}
	ss := m.Since()
	if len(ss) != 1 || len(ss[0].Rows) != 1 || !slices.Equal(ss[0].Rows[0].Regressed, []string{"1.10.1"}) {
		t.Errorf("since: %+v; want A61-HE-FIRST-PASS regressed at 1.10.1", ss)
	}
	if r := ss[0].Rows[0]; !slices.Equal(r.Unjudged, []string{"1.9.15"}) || r.Uncertain() {
		t.Errorf("unjudged %v, uncertain %v; want [1.9.15], false (it is after the first pass)", r.Unjudged, r.Uncertain())
	}
}

// TestSince_InTextAndJSON pins where the view appears: a section of the
// text after the totals, and the JSON's since object; neither for a matrix
// without two releases of one implementation.
func TestSince_InTextAndJSON(t *testing.T) {
	var text, js bytes.Buffer
	m := sinceMatrix()
	m.Text(&text)
	golden(t, "since.txt", text.Bytes())
	if err := m.JSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Since map[string]report.Since `json:"since"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Since["grpc-go"]; len(got.Rows) != 4 || *got.Rows[1].FirstPass != "v1.60.1" {
		t.Errorf("JSON since: %s", js.Bytes())
	}
	one := report.Matrix{Impls: sinceMatrix().Impls[2:3]}
	text.Reset()
	js.Reset()
	one.Text(&text)
	_ = one.JSON(&js)
	if bytes.Contains(text.Bytes(), []byte("since:")) || bytes.Contains(js.Bytes(), []byte(`"since"`)) {
		t.Errorf("a matrix of one release has a since view:\n%s\n%s", text.Bytes(), js.Bytes())
	}
}

// TestSince_FirstPassAfterAnUnjudgedReleaseIsUncertain: inconclusive,
// inconclusive, pass is a first pass that may not be the first; the text
// marks it.
func TestSince_FirstPassAfterAnUnjudgedReleaseIsUncertain(t *testing.T) {
	m := report.Matrix{Impls: []report.Impl{
		column("grpc-js@1.12.7", map[string]verdict.Verdict{"A61-HE-DELAY-DEFAULT": verdict.Inconclusive, "A61-HE-FIRST-PASS": verdict.Fail}),
		column("grpc-js@1.13.7", map[string]verdict.Verdict{"A61-HE-DELAY-DEFAULT": verdict.Error, "A61-HE-FIRST-PASS": verdict.Pass}),
		column("grpc-js@1.14.7", map[string]verdict.Verdict{"A61-HE-DELAY-DEFAULT": verdict.Pass, "A61-HE-FIRST-PASS": verdict.Pass}),
	}}
	rows := m.Since()[0].Rows
	if !rows[0].Uncertain() || rows[1].Uncertain() {
		t.Errorf("uncertain: %s %v, %s %v; want true, false", rows[0].Requirement, rows[0].Uncertain(), rows[1].Requirement, rows[1].Uncertain())
	}
	var text bytes.Buffer
	m.Text(&text)
	for _, want := range []string{"A61-HE-DELAY-DEFAULT                 1.14.7*", "A61-HE-FIRST-PASS                    1.13.7 ", "* an older release gave no verdict on it"} {
		if !bytes.Contains(text.Bytes(), []byte(want)) {
			t.Errorf("text lacks %q:\n%s", want, text.Bytes())
		}
	}
}

// TestSince_RegressionIsOneRowsPassThenFail: a requirement judged by two
// specs regressed only where one spec's row that passed fails. Release 1
// passes it on he-dropped-ipv6 (he-all-refused not applicable), release 2
// fails it on he-all-refused alone (he-dropped-ipv6 not applicable): the
// requirement went from pass to fail, but no row did. Release 3 fails it on he-dropped-ipv6,
// which passed at release 1: a regression.
func TestSince_RegressionIsOneRowsPassThenFail(t *testing.T) {
	release := func(name string, verdicts ...verdict.Verdict) report.Impl {
		im := report.Impl{Name: name}
		for i, spec := range []string{"he-dropped-ipv6", "he-all-refused"} {
			r := verdict.Result{Spec: spec, Doc: "A61", Requirement: "A61-HE-FIRST-PASS", Mode: "lab", Verdict: verdicts[i]}
			im.Runs = append(im.Runs, report.Run{Subject: verdict.Subject{Spec: spec, Doc: "A61", Mode: "lab"}, Impl: name, Results: []verdict.Result{r}})
		}
		return im
	}
	const p, f, na = verdict.Pass, verdict.Fail, verdict.NotApplicable
	m := report.Matrix{Impls: []report.Impl{
		release("grpc-go@v1.70.0", p, na),
		release("grpc-go@v1.71.0", na, f),
		release("grpc-go@v1.72.0", f, f),
	}}
	r := m.Since()[0].Rows[0]
	if got := r.Verdicts; got["v1.70.0"] != "pass" || got["v1.71.0"] != "fail" {
		t.Fatalf("verdicts %v; want the requirement passed at v1.70.0 and failed at v1.71.0", got)
	}
	if !slices.Equal(r.Regressed, []string{"v1.72.0"}) {
		t.Errorf("regressed at %v; want [v1.72.0], where he-dropped-ipv6's row went from pass to fail", r.Regressed)
	}
}
