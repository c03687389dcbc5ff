package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/suites/spec"
)

// TestDiffHTML_PageMarksTheDivergence verifies diff --html: a page with A
// as the golden pane and B as the observed one, the comparison's row a
// fail whose evidence is the first divergence; for two traces that agree,
// a pass.
func TestDiffHTML_PageMarksTheDivergence(t *testing.T) {
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	good := dir + "/a61/he-dropped-ipv6.sim.jsonl"
	bad := dir + "/bad/a61/he-dropped-ipv6.A61-HE-DELAY-DEFAULT.sim.jsonl"
	for _, c := range []struct {
		b, want string
		code    int
	}{{good, `"verdict":"pass"`, 0}, {bad, `"verdict":"fail"`, 1}} {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"diff", "--html", out, good, c.b}, &stdout, &stderr)
		got, ee := 0, exitError{}
		if errors.As(err, &ee) {
			got = ee.code
		} else if err != nil {
			t.Fatalf("diff %s: %v (%s)", filepath.Base(c.b), err, stderr.String())
		}
		if got != c.code {
			t.Fatalf("diff %s: exit %d, want %d", filepath.Base(c.b), got, c.code)
		}
		page, err := os.ReadFile(filepath.Join(out, html.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), c.want) {
			t.Errorf("diff %s: the page has no %s", filepath.Base(c.b), c.want)
		}
		if c.code == 1 && !strings.Contains(string(page), "first divergence") {
			t.Errorf("diff %s: the page does not show the first divergence", filepath.Base(c.b))
		}
	}
}

// TestTry_MonitorsAndPage verifies try judges a run by the monitors that
// apply (printed, and rows of its --html page).
func TestTry_MonitorsAndPage(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"try", "--mode", "sim", "--out", filepath.Join(out, "traces"), "--html", out,
		"../../harness/scenario/testdata/he-dropped-ipv6-ok.yaml"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("try: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "monitor he-attempt-delay") || !strings.Contains(stdout.String(), "pass") {
		t.Errorf("try's output names no monitor verdict:\n%s", stdout.String())
	}
	page, err := os.ReadFile(filepath.Join(out, html.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "A61-HE-DELAY-DEFAULT") {
		t.Error("the page has no row of the monitor that judged the run")
	}
}
