package html

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

const hostile = "</script><script>alert(1)</script> <!-- & </SCRIPT > \u2028"

func simTrace(t *testing.T) *trace.Trace {
	t.Helper()
	s := scenario.New("he-dropped-ipv6").
		Backend("b1", scenario.Dual).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(30 * time.Second).
		MustBuild()
	tr, err := runner.Run(context.Background(), s, runner.Reference, trace.ModeSim, runner.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func testReport(t *testing.T) Report {
	tr := simTrace(t)
	q, ok := requirement.ByID("A61-HE-DELAY-DEFAULT")
	if !ok {
		t.Fatal("A61-HE-DELAY-DEFAULT not in the catalogue")
	}
	hostileTrace := &trace.Trace{Header: tr.Header, Events: append([]trace.Event{{
		Source: trace.SourceHarness, Kind: trace.KindNote, Detail: hostile}}, tr.Events...)}
	return Report{
		Title:        "t <b>" + hostile,
		Generated:    time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
		Impls:        []string{"reference", "x" + hostile},
		Requirements: []Requirement{FromCatalogue(q), {ID: "A61-X", Doc: "A61", Section: hostile, Text: hostile}},
		Results: []Result{
			{Impl: "reference", Spec: "he-dropped-ipv6", Requirement: q.ID, Mode: trace.ModeSim, Verdict: verdict.Pass},
			{Impl: "x" + hostile, Spec: "he-dropped-ipv6", Requirement: q.ID, Mode: trace.ModeSim, Verdict: verdict.Fail, Evidence: hostile},
			{Impl: "x" + hostile, Spec: "other", Requirement: "A61-X", Mode: trace.ModeLab, Verdict: verdict.Error, Evidence: "line 1\nline 2"},
		},
		Runs: []Run{
			{Impl: "reference", Spec: "he-dropped-ipv6", Mode: trace.ModeSim, Golden: tr, Observed: tr},
			{Impl: "x" + hostile, Spec: "he-dropped-ipv6", Mode: trace.ModeSim, Golden: tr, Observed: hostileTrace},
			{Impl: "x" + hostile, Spec: "other", Mode: trace.ModeLab, Err: hostile},
		},
	}
}

func render(t *testing.T, r Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var dataElem = regexp.MustCompile(`(?s)<script type="application/json" id="report-data">(.*?)</script>`)

// TestWrite_AtomicOneFile verifies Write leaves exactly dir/index.html, no
// temporary file, and replaces an existing report whole.
func TestWrite_AtomicOneFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	r := testReport(t)
	for i := 0; i < 2; i++ {
		if i == 1 {
			r.Title = "second"
		}
		if err := Write(dir, r); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 || ents[0].Name() != FileName {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("dir holds %v, want only %s", names, FileName)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("<title>second</title>")) {
		t.Error("the second Write did not replace the report")
	}
}

// TestWrite_FailureLeavesNothing verifies a report that cannot be rendered
// neither creates nor replaces index.html.
func TestWrite_FailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	r := testReport(t)
	r.Results[0].Verdict = "maybe"
	if err := Write(dir, r); err == nil || !strings.Contains(err.Error(), "Results[0].Verdict") {
		t.Fatalf("err = %v, want one naming Results[0].Verdict", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed Write left %d files", len(ents))
	}
}

// TestRender_RefusesInconsistentReports verifies every reference to an
// implementation or requirement the report does not list is an error that
// names the field.
func TestRender_RefusesInconsistentReports(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*Report)
	}{
		{"Results[1].Impl", func(r *Report) { r.Results[1].Impl = "nobody" }},
		{"Results[0].Requirement", func(r *Report) { r.Results[0].Requirement = "A61-NOPE" }},
		{"Runs[2].Impl", func(r *Report) { r.Runs[2].Impl = "nobody" }},
		{"Impls[1]", func(r *Report) { r.Impls[1] = r.Impls[0] }},
		{"Requirements[1]", func(r *Report) { r.Requirements[1].ID = "" }},
	} {
		r := testReport(t)
		tc.edit(&r)
		if err := Render(&bytes.Buffer{}, r); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v, want one naming the field", tc.field, err)
		}
	}
}

// TestRender_NoNetworkReferences verifies the page loads nothing: no
// http(s) URL other than the SVG namespace the script creates elements in,
// no src, no stylesheet link, no import, no url() but fragment references.
func TestRender_NoNetworkReferences(t *testing.T) {
	page := render(t, testReport(t))
	rest := strings.Replace(page, `"http://www.w3.org/2000/svg"`, "", 1)
	for _, bad := range []string{"http://", "https://", "//cdn", " src=", "<link", "@import", "@font-face"} {
		if i := strings.Index(strings.ToLower(rest), bad); i >= 0 {
			t.Errorf("page refers to %q: …%s…", bad, rest[max(0, i-60):min(len(rest), i+60)])
		}
	}
	for _, m := range regexp.MustCompile(`url\(([^)]*)\)`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(strings.Trim(m[1], `"' `), "#") {
			t.Errorf("page has url(%s)", m[1])
		}
	}
	if strings.Count(page, "<script") != 2 {
		t.Errorf("page has %d script elements, want 2 (data, code)", strings.Count(page, "<script"))
	}
}

// TestRender_DataRoundTrips verifies the embedded JSON parses and carries
// the report: implementations, requirements, results and runs as given, and
// every trace event by event (in canonical form), with its String form.
func TestRender_DataRoundTrips(t *testing.T) {
	r := testReport(t)
	page := render(t, r)
	m := dataElem.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no report-data element")
	}
	var d data
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("embedded JSON: %v", err)
	}
	if d.Title != r.Title || d.Generated != "2025-06-01T12:00:00Z" {
		t.Errorf("title %q generated %q", d.Title, d.Generated)
	}
	if !reflect.DeepEqual(d.Impls, r.Impls) || !reflect.DeepEqual(d.Requirements, r.Requirements) || !reflect.DeepEqual(d.Results, r.Results) {
		t.Errorf("impls, requirements or results differ after the round trip:\n%+v\n%+v", d.Results, r.Results)
	}
	if len(d.Runs) != len(r.Runs) {
		t.Fatalf("%d runs, want %d", len(d.Runs), len(r.Runs))
	}
	// the golden trace shared by two runs is embedded once
	if len(d.Traces) != 2 {
		t.Errorf("%d traces embedded, want 2", len(d.Traces))
	}
	back := func(i int) *trace.Trace {
		if i < 0 {
			return nil
		}
		tr := &trace.Trace{Header: d.Traces[i].Header}
		for _, e := range d.Traces[i].Events {
			if e.Str != e.Event.String() {
				t.Errorf("event %q carries %q", e.Event.String(), e.Str)
			}
			tr.Events = append(tr.Events, e.Event)
		}
		return tr
	}
	same := func(what string, a, b *trace.Trace) {
		if (a == nil) != (b == nil) {
			t.Errorf("%s: nil %v, want nil %v", what, a == nil, b == nil)
			return
		}
		if a == nil {
			return
		}
		ca, err1 := trace.Canonical(a)
		cb, err2 := trace.Canonical(b)
		if err1 != nil || err2 != nil || !bytes.Equal(ca, cb) {
			t.Errorf("%s differs after the round trip (%v, %v)", what, err1, err2)
		}
	}
	for i, run := range r.Runs {
		g := d.Runs[i]
		if g.Impl != run.Impl || g.Spec != run.Spec || g.Mode != run.Mode || g.Err != run.Err || g.ID == "" {
			t.Errorf("run %d: %+v, want %+v", i, g, run)
		}
		same("run golden", back(g.Golden), run.Golden)
		same("run observed", back(g.Observed), run.Observed)
	}
}

// TestRender_HostileStringsEscaped verifies text from traces, evidence and
// names cannot end the data element or become markup: the only "</script"
// are the page's own two, and the title is HTML-escaped.
func TestRender_HostileStringsEscaped(t *testing.T) {
	page := render(t, testReport(t))
	if n := strings.Count(strings.ToLower(page), "</script"); n != 2 {
		t.Errorf("page has %d \"</script\", want 2 (its own)", n)
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>") {
		t.Error("hostile text appears as markup")
	}
	if !strings.Contains(page, "<title>t &lt;b&gt;&lt;/script&gt;") {
		t.Error("the title is not HTML-escaped")
	}
	m := dataElem.FindStringSubmatch(page)
	if m == nil || !strings.Contains(m[1], `\u003c/script\u003e\u003cscript\u003ealert(1)`) {
		t.Error("evidence is not escaped as \\u003c in the data")
	}
	if m != nil && strings.Contains(m[1], "\u2028") {
		t.Error("a raw U+2028 is in the data (older JavaScript parsers end a line there)")
	}
}

// TestAssets_NoScriptEnd verifies the embedded code and style cannot end
// their elements early.
func TestAssets_NoScriptEnd(t *testing.T) {
	for name, s := range map[string]string{"report.js": pageJS, "report.css": pageCSS} {
		if strings.Contains(strings.ToLower(s), "</script") || strings.Contains(strings.ToLower(s), "</style") || strings.Contains(s, "<!--") {
			t.Errorf("%s contains an element end or comment opener", name)
		}
	}
	for _, p := range []string{"{{TITLE}}", "/*{{CSS}}*/", "/*{{JS}}*/", "{{DATA}}"} {
		if !strings.Contains(pageHTML, p) {
			t.Errorf("report.html lacks %s", p)
		}
	}
}
