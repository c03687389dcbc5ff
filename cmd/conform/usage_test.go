package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinary_UsageErrorsSayWhatIsWrong builds conform and runs it with each
// kind of bad command line: every one exits 2 with one line on stderr naming
// what was wrong (never "interrupted"), before any work starts.
func TestBinary_UsageErrorsSayWhatIsWrong(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "conform")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"lab", "frob"}, `unknown subcommand "frob"`},
		{[]string{"run", "-p", "0"}, "-p 0: want at least 1"},
		{[]string{"run", "-p", "-2"}, "-p -2: want at least 1"},
		{[]string{"record", "-p", "0"}, "record: -p 0"},
		{[]string{"run", "--suite", "a99"}, `no suite "a99"`},
		{[]string{"run", "--mode", "moon"}, `"moon" is not sim, lab or both`},
		{[]string{"run", "--label-filter", "(("}, `--label-filter "(("`},
		{[]string{"run", "--junit", "/nonexistent/dir/x.xml"}, "--junit: /nonexistent/dir/x.xml cannot be written"},
		{[]string{"run", "--traces", "/nonexistent"}, "--traces /nonexistent: not a directory"},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"verify"}, "say which implementation"},
		{[]string{"verify", "--impl", "grpc-go@v9"}, `"v9" is not a grpc-go module version`},
		{[]string{"verify", "--impl", "grpc-zig@1"}, "unknown implementation"},
		{[]string{"verify", "--impl", "grpc-js@1.14.7", "--fail-on", "sometimes"}, `--fail-on "sometimes"`},
		{[]string{"verify", "--impl", "grpcio", "--html", "/proc/nope"}, "--html /proc/nope"},
		{[]string{"verify", "--impl", "grpc-go@v1.85.0", "--shard", "3/2"}, `--shard "3/2": want i/n with 1 ≤ i ≤ n`},
		{[]string{"verify", "--impl", "grpc-go@v1.85.0..v1.55.0"}, "the range runs backwards: v1.85.0 is later than v1.55.0"},
		{[]string{"verify", "--impl", "grpc-go@v1.55.0..", "--results", "/nonexistent/r.json"}, "--results: /nonexistent/r.json cannot be written"},
		{[]string{"merge"}, "name the results files"},
		{[]string{"merge", "--fail-on", "sometimes", "r.json"}, `--fail-on "sometimes"`},
		{[]string{"bisect", "--impl", "grpc-go@v1.85.0", "--spec", "a61/he-dropped-ipv6"}, "want a range of releases"},
		{[]string{"bisect", "--impl", "grpc-go@v1.55.0..v1.85.0", "--spec", "a61/nope"}, "suite a61 has no such spec"},
		{[]string{"try"}, "name at least one scenario file"},
		{[]string{"try", "--mode", "moon", "x.yaml"}, `--mode "moon"`},
		{[]string{"diff", "only-one.jsonl"}, "want two traces"},
	} {
		cmd := exec.Command(bin, c.args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		last := lastLine(stderr.String())
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(last, c.says) || strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("conform %s: %v, last line %q; want exit status 2 saying %q", strings.Join(c.args, " "), err, last, c.says)
		}
	}
	if _, err := os.Stat("/nonexistent/dir"); err == nil {
		t.Error("a usage error created the --junit directory")
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
