package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	// Versions are checked where the drivers come from, here a module
	// proxy and an npm registry of conform's own, so that no test depends
	// on the network: each has grpc-go v1.85.0 or grpc-js 1.14.7 only.
	cache := t.TempDir()
	published := []string{"CONFORM_CACHE=" + cache, "GOPROXY=" + fakeModuleProxy(t), "GOMODCACHE=" + t.TempDir(),
		"GOSUMDB=off", "npm_config_registry=" + fakeNPMRegistry(t), "npm_config_cache=" + t.TempDir()}
	for _, c := range []struct {
		args []string
		says string
		env  []string
	}{
		{[]string{"frob"}, `unknown command "frob"`, nil},
		{[]string{"lab", "frob"}, `unknown subcommand "frob"`, nil},
		{[]string{"run", "-p", "0"}, "-p 0: want at least 1", nil},
		{[]string{"run", "-p", "-2"}, "-p -2: want at least 1", nil},
		{[]string{"record", "-p", "0"}, "record: -p 0", nil},
		{[]string{"run", "--suite", "a99"}, `no suite "a99"`, nil},
		{[]string{"run", "--mode", "moon"}, `"moon" is not sim, lab or both`, nil},
		{[]string{"run", "--label-filter", "(("}, `--label-filter "(("`, nil},
		{[]string{"run", "--junit", "/nonexistent/dir/x.xml"}, "--junit: /nonexistent/dir/x.xml cannot be written", nil},
		{[]string{"run", "--traces", "/nonexistent"}, "--traces /nonexistent: not a directory", nil},
		{[]string{"run", "extra"}, `unexpected argument "extra"`, nil},
		{[]string{"verify"}, "say which implementation", nil},
		{[]string{"verify", "--impl", "grpc-go@v9"}, `"v9" is not a grpc-go module version`, nil},
		{[]string{"verify", "--impl", "grpc-zig@1"}, "unknown implementation", nil},
		{[]string{"verify", "--impl", "grpc-js@1.14.7", "--fail-on", "sometimes"}, `--fail-on "sometimes"`, nil},
		{[]string{"verify", "--impl", "grpcio", "--html", "/proc/nope"}, "--html /proc/nope", nil},
		{[]string{"try"}, "name at least one scenario file", nil},
		{[]string{"try", "--mode", "moon", "x.yaml"}, `--mode "moon"`, nil},
		{[]string{"diff", "only-one.jsonl"}, "want two traces", nil},
		{[]string{"run", "--pcap", "/proc/nope"}, "--pcap /proc/nope", nil},
		{[]string{"verify", "--impl", "grpcio", "--pcap", "/proc/nope"}, "--pcap /proc/nope", nil},
		{[]string{"try", "--mode", "sim", "--pcap", "/proc/nope", "x.yaml"}, "--pcap /proc/nope", nil},
		{[]string{"verify", "--impl", "grpc-go@v9.9.9"}, `impl "grpc-go@v9.9.9": the Go module proxy`, published},
		{[]string{"verify", "--impl", "grpc-js@9.9.9"}, `impl "grpc-js@9.9.9": the npm registry`, published},
		{[]string{"try", "--impl", "grpc-js@1.2.3", "x.yaml"}, "has no version 1.2.3", published},
		{[]string{"check"}, "name at least one trace or capture", nil},
		{[]string{"run", "--mode", "sim", "--label-filter", "NO-SUCH-LABEL"}, "no spec matches", nil},
		{[]string{"check", "/nonexistent.jsonl"}, "/nonexistent.jsonl", nil},
		{[]string{"verify", "--impl", "grpc-go@v1.85.0", "--shard", "3/2"}, `--shard "3/2": want i/n with 1 ≤ i ≤ n`, nil},
		{[]string{"verify", "--impl", "grpc-go@v1.85.0..v1.55.0"}, "the range runs backwards: v1.85.0 is later than v1.55.0", nil},
		{[]string{"verify", "--impl", "grpc-go@v1.55.0..", "--results", "/nonexistent/r.json"}, "--results: /nonexistent/r.json cannot be written", nil},
		{[]string{"merge"}, "name the results files", nil},
		{[]string{"merge", "--fail-on", "sometimes", "r.json"}, `--fail-on "sometimes"`, nil},
		{[]string{"bisect", "--impl", "grpc-go@v1.85.0", "--spec", "a61/he-dropped-ipv6"}, "want a range of releases", nil},
		{[]string{"bisect", "--impl", "grpc-go@v1.55.0..v1.85.0", "--spec", "a61/nope"}, "suite a61 has no such spec", nil},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = append(os.Environ(), c.env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		last := lastLine(stderr.String())
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(last, c.says) || strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("conform %s: %v, last line %q; want exit status 2 saying %q", strings.Join(c.args, " "), err, last, c.says)
		}
		if n := strings.Count(stderr.String(), "\n"); n != 1 && c.env != nil {
			t.Errorf("conform %s: %d lines on stderr, want the one error:\n%s", strings.Join(c.args, " "), n, stderr.String())
		}
	}
	// Outside a checkout, without --traces: where the golden traces are
	// is a usage error too.
	outside := exec.Command(bin, "run", "--mode", "sim")
	outside.Dir = t.TempDir()
	var outErr bytes.Buffer
	outside.Stderr = &outErr
	var ee *exec.ExitError
	if err := outside.Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(outErr.String(), "no traces directory") {
		t.Errorf("conform run outside a checkout: %v, %q; want exit status 2 saying where the traces are", err, outErr.String())
	}
	// Published versions pass the check (the run stops later, at the
	// label filter no spec matches).
	cmd := exec.Command(bin, "verify", "--impl", "grpc-go@v1.85.0", "--impl", "grpc-js@1.14.7", "--impl", "grpc-js@latest", "--label-filter", "NO-SUCH-LABEL")
	cmd.Env = append(os.Environ(), published...)
	if out, _ := cmd.CombinedOutput(); strings.Contains(string(out), "grpc-") {
		t.Errorf("published versions were refused or not checked:\n%s", out)
	}
	if left, _ := os.ReadDir(cache); len(left) != 0 {
		t.Errorf("a version that does not exist left %v in the cache", left)
	}
	if _, err := os.Stat("/nonexistent/dir"); err == nil {
		t.Error("a usage error created the --junit directory")
	}
}

// TestBinary_GoBalancerErrorsSayWhatIsWrong runs conform verify with a
// user's balancer that cannot be judged — a version the module proxy does
// not have, a directory without a module, a module that does not build, a
// mapping onto a policy it does not register — and with bad --policy
// arguments: each exits 2 before any scenario, its last line naming what
// is wrong and what would be right, and nothing is left in the cache.
func TestBinary_GoBalancerErrorsSayWhatIsWrong(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "conform")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	example, err := filepath.Abs("../../examples/acme-pickfirst")
	if err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":    "module example.com/broken\n\ngo 1.26.0\n\nrequire google.golang.org/grpc v1.85.0\n",
		"broken.go": "package broken\n\nimport _ \"google.golang.org/grpc\"\n\nvar x int = \"not an int\"\n",
	} {
		if err := os.WriteFile(filepath.Join(broken, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, filepath.Join(example, "go.sum"), filepath.Join(broken, "go.sum"))
	cache := t.TempDir()
	// The proxy of conform's own has only grpc-go. Builds use the module
	// cache and the user's proxy: they are tried only when the example's
	// driver builds here.
	proxy := []string{"CONFORM_CACHE=" + cache, "GOPROXY=" + fakeModuleProxy(t), "GOMODCACHE=" + t.TempDir(), "GOSUMDB=off"}
	builds := []string{"CONFORM_CACHE=" + cache}
	probe := exec.Command(bin, "verify", "--impl", "go:"+example, "--label-filter", "NO-SUCH-LABEL")
	probe.Env = append(os.Environ(), builds...)
	if out, _ := probe.CombinedOutput(); !strings.Contains(string(out), "no spec matches") {
		t.Logf("the example's driver does not build here, so the build cases are left out:\n%s", out)
		builds = []string{} // marks the build cases to leave out
	}
	for _, c := range []struct {
		args []string
		says string
		env  []string
	}{
		{[]string{"verify", "--impl", "go:example.com/acme"}, "say which version of example.com/acme", nil},
		{[]string{"verify", "--impl", "go:example.com/acme@latest"}, `"latest" is not a module version`, nil},
		{[]string{"verify", "--impl", "grpc-go@v1.85.0", "--policy", "pick_first=acme_pick_first"}, "give it as --impl go:<module>@<version> or --impl go:<dir>", nil},
		{[]string{"verify", "--impl", "go:./x", "--policy", "pickfirst=acme"}, "pickfirst is not a policy conform's scenarios use (they use pick_first,", nil},
		{[]string{"verify", "--impl", "go:./x", "--policy", "pick_first"}, "want STANDARD=YOURS, e.g. pick_first=acme_pick_first", nil},
		{[]string{"try", "--impl", "grpc-go@v1.85.0", "--policy", "pick_first=acme_pick_first", "x.yaml"}, "try: --policy maps the scenarios' policies onto your own balancer's", nil},
		{[]string{"verify", "--impl", "grpc-go@v1.85.0", "--can", "shuffle"}, "--can: capability \"shuffle\" is pick_first's, which no mapping maps onto yours", nil},
		{[]string{"verify", "--impl", "go:./x", "--policy", "pick_first=acme", "--can", "frob"}, "--can: capability \"frob\": not one a balancer declares", nil},
		{[]string{"verify", "--impl", "go:example.com/acme@v1.0.0"}, `impl "go:example.com/acme@v1.0.0": the Go module proxy (GOPROXY=file://`, proxy},
		{[]string{"verify", "--impl", "go:/nonexistent/acme"}, `impl "go:/nonexistent/acme": no directory /nonexistent/acme; name the directory of your balancer's Go module`, nil},
		{[]string{"verify", "--impl", "go:" + broken}, "the Go driver does not build with it: " + broken + "/broken.go:5:13: cannot use", builds},
		{[]string{"verify", "--impl", "go:" + example, "--policy", "pick_first=acme_pick_frist"}, "names acme_pick_frist, which this build has not registered", builds},
	} {
		if c.env != nil && len(c.env) == 0 {
			continue // a build case where the example does not build
		}
		cmd := exec.Command(bin, append(c.args, "--label-filter", "NO-SUCH-LABEL")...)
		cmd.Env = append(os.Environ(), c.env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		last := lastLine(stderr.String())
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(last, c.says) || strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("conform %s: %v, stderr:\n%s\nwant exit status 2 saying %q", strings.Join(c.args, " "), err, stderr.String(), c.says)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(cache, "drivers", "go-balancer")); len(left) > 1 {
		t.Errorf("failed builds left %v in the cache (only the example's build belongs there)", left)
	}
	if entries, _ := os.ReadDir(cache); len(entries) > 1 {
		t.Errorf("the cache holds %v, want the drivers directory only (no scratch build left)", entries)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// fakeModuleProxy is a Go module proxy (GOPROXY=file://…) that has
// google.golang.org/grpc v1.85.0 only.
func fakeModuleProxy(t *testing.T) string {
	dir := t.TempDir()
	v := filepath.Join(dir, "google.golang.org", "grpc", "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"list":         "v1.85.0\n",
		"v1.85.0.info": `{"Version":"v1.85.0","Time":"2026-10-27T09:27:04Z"}`,
		"v1.85.0.mod":  "module google.golang.org/grpc\n",
	} {
		if err := os.WriteFile(filepath.Join(v, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return "file://" + dir
}

// fakeNPMRegistry is an npm registry that has @grpc/grpc-js 1.14.7 only.
func fakeNPMRegistry(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, _ := url.PathUnescape(r.URL.EscapedPath()); p != "/@grpc/grpc-js" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"@grpc/grpc-js","dist-tags":{"latest":"1.14.7"},`+
			`"versions":{"1.14.7":{"name":"@grpc/grpc-js","version":"1.14.7"}}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}
