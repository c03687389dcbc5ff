package html_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/verdict"
)

// TestChromium_RendersTheSinceView verifies the since section in a real
// browser: one table per implementation, a row per requirement with its
// first pass ("never" when none) and its regressions; and no section for
// a report without a since view.
func TestChromium_RendersTheSinceView(t *testing.T) {
	bin := findChromium(t)
	rep := html.Report{Title: "since", Impls: []string{"grpc-go@v1.55.1", "grpc-go@v1.85.0"},
		Requirements: []html.Requirement{{ID: "A61-HE-DELAY-DEFAULT", Doc: "A61"}, {ID: "A61-HE-TURN-IDLE", Doc: "A61"}},
		Results: []html.Result{
			{Impl: "grpc-go@v1.55.1", Spec: "s", Requirement: "A61-HE-DELAY-DEFAULT", Mode: "lab", Verdict: verdict.Fail},
			{Impl: "grpc-go@v1.85.0", Spec: "s", Requirement: "A61-HE-DELAY-DEFAULT", Mode: "lab", Verdict: verdict.Pass},
		},
		Since: []html.Since{{Impl: "grpc-go", Versions: []string{"v1.55.1", "v1.85.0"}, Rows: []html.SinceRow{
			{Requirement: "A61-HE-DELAY-DEFAULT", FirstPass: "v1.85.0", Regressed: []string{}, Uncertain: true},
			{Requirement: "A61-HE-TURN-IDLE", Regressed: []string{"v1.85.0"}},
		}}},
	}
	dom := func(r html.Report) string {
		dir := t.TempDir()
		if err := html.Write(dir, r); err != nil {
			t.Fatal(err)
		}
		d := string(chromium(t, bin, "file://"+filepath.Join(dir, html.FileName), "--dump-dom"))
		if !strings.Contains(d, `data-rendered="true"`) {
			t.Fatalf("the page's script did not finish; DOM:\n%.2000s", d)
		}
		return d
	}
	d := dom(rep)
	if !regexp.MustCompile(`<section id="since">`).MatchString(d) {
		t.Errorf("the since section is hidden or missing")
	}
	for _, want := range []string{
		`<caption>grpc-go: 2 releases, v1.55.1 … v1.85.0</caption>`,
		`<tr data-req="A61-HE-DELAY-DEFAULT"><td><code>A61-HE-DELAY-DEFAULT</code></td><td class="first" title="an older release gave no verdict on it (inconclusive or error): it may have passed earlier">v1.85.0*</td><td class="">–</td></tr>`,
		`<tr data-req="A61-HE-TURN-IDLE"><td><code>A61-HE-TURN-IDLE</code></td><td class="never">never</td><td class="regressed">v1.85.0</td></tr>`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	rep.Since = nil
	if d := dom(rep); !strings.Contains(d, `<section id="since" hidden="">`) {
		t.Errorf("a report without a since view shows the section")
	}
}
