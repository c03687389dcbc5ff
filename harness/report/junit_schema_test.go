package report_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/report"
)

// TestJUnit_ValidatesAgainstTheSchema checks the JUnit report of runs of
// every verdict against the JUnit schema CI servers read
// (testdata/junit.xsd, after Jenkins's), with xmllint; and that the schema
// refuses a testcase without its classname, so that the check can fail.
func TestJUnit_ValidatesAgainstTheSchema(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint is not installed (Debian: apt-get install libxml2-utils); .ci/run installs it")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "junit.xml")
	if err := report.WriteJUnit(path, fixtureRuns()); err != nil {
		t.Fatal(err)
	}
	if out, err := xmllint(path); err != nil {
		t.Errorf("conform's JUnit report does not validate: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.xml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(b), ` classname="`, ` class="`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := xmllint(bad); err == nil {
		t.Errorf("the schema takes a testcase without a classname:\n%s", out)
	}
}

func xmllint(path string) ([]byte, error) {
	return exec.Command("xmllint", "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), path).CombinedOutput()
}
