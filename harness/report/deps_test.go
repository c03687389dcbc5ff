package report_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/conformlab/conform/"

// TestDeps_FormatsImportNoRunner verifies DESIGN.md's rule "formats are
// data and import no runner": nothing the report packages import, directly
// or through other packages of the module, runs a scenario or builds a lab.
func TestDeps_FormatsImportNoRunner(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"harness/runner", "harness/driver", "harness/sim", "harness/recorder", "netlab", "reference", "suites", "cmd"}
	seen := map[string]bool{}
	var visit func(pkg, from string)
	visit = func(pkg, from string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("%s imports %s", from, pkg)
				return
			}
		}
		for _, imp := range moduleImports(t, filepath.Join(root, pkg)) {
			visit(imp, pkg)
		}
	}
	visit("harness/report", "")
	visit("harness/report/html", "")
}

// moduleImports lists the module's packages that the non-test Go files in
// dir import, as paths inside the module.
func moduleImports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(path, module); ok {
				out = append(out, rest)
			}
		}
	}
	return out
}
