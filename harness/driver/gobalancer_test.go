package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/conformlab/conform/harness/trace"
)

// exampleBalancer is the worked example's module directory.
func exampleBalancer(t *testing.T) string {
	t.Helper()
	src := FindSource()
	if src == "" {
		t.Skip("driver: not inside conform's checkout, which holds examples/acme-pickfirst")
	}
	return filepath.Join(src, "examples", "acme-pickfirst")
}

// copyDir copies the files (not subdirectories) of src into a new
// temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestGoBalancerKey_ByVersionAndContent verifies the cache keys of a
// user's balancer build: a module version keys by that version, a
// directory by its content, so that an edit is a new build and an
// unchanged directory, wherever it is, is not.
func TestGoBalancerKey_ByVersionAndContent(t *testing.T) {
	_, k1, _, err := balancerBuildKey(Release{Name: GoBalancer, Module: "example.com/acme", Version: "v1.2.3"})
	if err != nil || !strings.HasPrefix(k1, "example.com-acme@v1.2.3-") {
		t.Errorf("key of example.com/acme@v1.2.3 = %q, %v; want it to start with the module and its version", k1, err)
	}
	dir := copyDir(t, exampleBalancer(t))
	key := func() string {
		t.Helper()
		mod, k, replace, err := balancerBuildKey(Release{Name: GoBalancer, Module: dir})
		if err != nil || mod != "example.com/acme-pickfirst" || replace != dir {
			t.Fatalf("balancerBuildKey(%s) = %q, %q, %q, %v", dir, mod, k, replace, err)
		}
		return k
	}
	before := key()
	if again := key(); again != before {
		t.Errorf("an unchanged directory's key changed: %s, then %s", before, again)
	}
	if other := copyDir(t, dir); func() string {
		_, k, _, _ := balancerBuildKey(Release{Name: GoBalancer, Module: other})
		return k
	}() != before {
		t.Errorf("the same module in another directory has another key")
	}
	f := filepath.Join(dir, "acmepickfirst.go")
	b, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(b, "\n// an edit\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if after := key(); after == before {
		t.Errorf("an edit did not change the key %s", before)
	}
}

// TestGoBalancerPublished_MissingDirectory verifies that a directory
// without a Go module is refused before any build, saying what to name.
func TestGoBalancerPublished_MissingDirectory(t *testing.T) {
	for dir, says := range map[string]string{
		"/nonexistent/acme": "no directory /nonexistent/acme; name the directory of your balancer's Go module",
		t.TempDir():         "no go.mod in ",
	} {
		impl, err := ParseRelease("go:" + dir)
		if err != nil {
			t.Fatal(err)
		}
		err = Published(context.Background(), impl)
		if !IsBadRelease(err) || !strings.Contains(err.Error(), says) {
			t.Errorf("Published(%s) = %v, want a BadModuleError saying %q", impl, err, says)
		}
	}
}

// TestInstallGoBalancer_Example builds the Go driver with the worked
// example linked in and checks, from the driver's hello, that the
// example's policy stands in for pick_first on the grpc-go the example
// requires; a mapping onto a policy nobody registered stops the driver,
// naming it.
func TestInstallGoBalancer_Example(t *testing.T) {
	impl, err := ParseRelease("go:" + exampleBalancer(t))
	if err != nil {
		t.Fatal(err)
	}
	impl.Policies = "pick_first=acme_pick_first"
	cmd := install(t, impl)
	if !slices.Contains(cmd.Env, "CONFORM_POLICY_MAP=pick_first=acme_pick_first") {
		t.Errorf("the driver's environment %v lacks the mapping", cmd.Env)
	}
	hello := driverHello(t, cmd)
	if hello.Impl != "go:example.com/acme-pickfirst" || hello.Version != "local on grpc-go v1.85.0 [pick_first=acme_pick_first]" {
		t.Errorf("hello names %q %q, want go:example.com/acme-pickfirst, local on grpc-go v1.85.0 [pick_first=acme_pick_first] (the example's go.mod)", hello.Impl, hello.Version)
	}
	if !slices.Contains(hello.Policies, "pick_first") || hello.Can["xds"] || hello.Can["shuffle"] {
		t.Errorf("hello: policies %v, xds %v, shuffle %v; want pick_first (mapped), no xDS (a mapping cannot reach xDS's policies), no shuffle (grpc-go's pick_first's, undeclared for the example)", hello.Policies, hello.Can["xds"], hello.Can["shuffle"])
	}
	declared := cmd
	declared.Env = append(slices.Clone(cmd.Env), "CONFORM_CAN=shuffle")
	if h := driverHello(t, declared); !h.Can["shuffle"] {
		t.Errorf("hello with shuffle declared: %v", h.Can)
	}
	again, err := Install(context.Background(), impl, InstallEnv{Cache: testCache})
	if err != nil || again.Path != cmd.Path {
		t.Errorf("a second install = %v, %v; want the cached %s", again.Path, err, cmd.Path)
	}
	bad := cmd
	bad.Env = []string{"CONFORM_POLICY_MAP=pick_first=acme_pick_frist"}
	out, err := runDriver(bad, "")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "names acme_pick_frist, which this build has not registered") {
		t.Errorf("a mapping onto an unregistered policy: %v, %q; want exit status 2 naming it", err, out)
	}
}

// TestInstallGoBalancer_OnItsOwnGRPC verifies that the driver runs the
// grpc-go the user's module requires, not the driver's own: the example
// made to require grpc-go v1.70.0 (from the module cache, else the
// proxy) says so in its hello.
func TestInstallGoBalancer_OnItsOwnGRPC(t *testing.T) {
	dir := copyDir(t, exampleBalancer(t))
	gomod := "module example.com/acme-pickfirst\n\ngo 1.26.0\n\nrequire google.golang.org/grpc v1.70.0\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "go.sum"))
	if err := checkModuleExists(context.Background(), t.TempDir(), "google.golang.org/grpc@v1.70.0"); err != nil {
		t.Skipf("driver: grpc-go v1.70.0 is neither in the module cache nor on a reachable proxy: %v", err)
	}
	cmd := install(t, Release{Name: GoBalancer, Module: dir})
	if hello := driverHello(t, cmd); hello.Version != "local on grpc-go v1.70.0" {
		t.Errorf("hello's version %q, want local on grpc-go v1.70.0 (the module's requirement)", hello.Version)
	}
}

// TestInstallGoBalancer_DoesNotBuild verifies that a module that does not
// compile is a BadModuleError quoting the compiler, and leaves nothing in
// the cache.
func TestInstallGoBalancer_DoesNotBuild(t *testing.T) {
	dir := copyDir(t, exampleBalancer(t))
	if err := os.WriteFile(filepath.Join(dir, "broken.go"), []byte("package acmepickfirst\n\nvar x int = \"not an int\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	impl := Release{Name: GoBalancer, Module: dir}
	_, err := Install(context.Background(), impl, InstallEnv{Cache: cache})
	if !IsBadRelease(err) || !strings.Contains(err.Error(), "broken.go:3:13") || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("Install(%s) = %v; want one line quoting broken.go:3:13", impl, err)
	}
	if left, _ := os.ReadDir(filepath.Join(cache, "drivers")); len(left) != 0 {
		t.Errorf("a failed build left %v in the cache", left)
	}
}

// driverHello runs the driver, says hello and closes it.
func driverHello(t *testing.T, cmd Command) Hello {
	t.Helper()
	out, err := runDriver(cmd, `{"id":1,"op":"hello"}`+"\n"+`{"id":2,"op":"close"}`+"\n")
	if err != nil {
		t.Fatalf("the driver: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var line struct{ Hello *Hello }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Hello != nil {
			return *line.Hello
		}
	}
	t.Fatalf("the driver said no hello:\n%s", out)
	return Hello{}
}

func runDriver(cmd Command, in string) (string, error) {
	c := exec.Command(cmd.Path)
	c.Env = append(os.Environ(), cmd.Env...)
	c.Stdin = strings.NewReader(in)
	out, err := c.CombinedOutput()
	return string(out), err
}

// TestInstallGoBalancer_ModuleVersion builds the driver with the worked
// example fetched as a module version, from a module proxy of the test's
// own that has v0.1.0 only (its dependencies come from the module cache):
// hello names that version, and a version the proxy lacks is refused
// before any build.
func TestInstallGoBalancer_ModuleVersion(t *testing.T) {
	proxy := t.TempDir()
	at := filepath.Join(proxy, "example.com", "acme-pickfirst", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	const mod, version = "example.com/acme-pickfirst", "v0.1.0"
	gomod, err := os.ReadFile(filepath.Join(exampleBalancer(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromDir(z, module.Version{Path: mod, Version: version}, exampleBalancer(t)); err != nil {
		t.Fatal(err)
	}
	z.Close()
	for name, body := range map[string][]byte{
		"list": []byte(version + "\n"), version + ".info": []byte(`{"Version":"v0.1.0","Time":"2026-11-01T00:00:00Z"}`), version + ".mod": gomod,
	} {
		if err := os.WriteFile(filepath.Join(at, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The test's module cache; its proxy, then the user's module cache as
	// a proxy (its download directory is one), then the user's proxy for
	// what neither has: nothing added to the user's module cache.
	userCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOPROXY", "file://"+proxy+",file://"+filepath.Join(strings.TrimSpace(string(userCache)), "cache", "download")+","+goProxy())
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOFLAGS", "-modcacherw")
	impl, err := ParseRelease("go:" + mod + "@" + version)
	if err != nil {
		t.Fatal(err)
	}
	if err := Published(context.Background(), impl); err != nil {
		t.Fatalf("Published(%s) = %v", impl, err)
	}
	missing := Release{Name: GoBalancer, Module: mod, Version: "v0.2.0"}
	if err := Published(context.Background(), missing); !IsNotPublished(err) || !strings.Contains(err.Error(), "go list -m -versions "+mod) {
		t.Errorf("Published(%s) = %v, want a NotPublishedError saying how to list the versions", missing, err)
	}
	cmd := install(t, impl)
	if !strings.Contains(cmd.Path, "example.com-acme-pickfirst@v0.1.0-") {
		t.Errorf("the build is cached at %s, want a key with the module and its version", cmd.Path)
	}
	if hello := driverHello(t, cmd); hello.Impl != "go:"+mod || hello.Version != "v0.1.0 on grpc-go v1.85.0" {
		t.Errorf("hello names %q %q, want go:%s, v0.1.0 on grpc-go v1.85.0", hello.Impl, hello.Version, mod)
	}
}

// TestBuildSimJudge_Example builds the simulator's program with the worked
// example and runs it on A61's he-dropped-ipv6 with the example standing
// in for pick_first: the trace, in the simulator, names the example and
// shows its one connection attempt (no Happy Eyeballs), at +0; a module
// on a later grpc-go than conform's is refused with the reason.
func TestBuildSimJudge_Example(t *testing.T) {
	impl := Release{Name: GoBalancer, Module: exampleBalancer(t), Policies: "pick_first=acme_pick_first"}
	start := time.Now()
	cmd, err := BuildSimJudge(context.Background(), impl, InstallEnv{Cache: testCache, Source: FindSource()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("building the simulator's program took %v", time.Since(start).Round(time.Millisecond))
	out := t.TempDir()
	req, _ := json.Marshal(map[string]any{"name": "go:acme", "policies": impl.Policies, "specs": []string{"A61/he-dropped-ipv6"}, "out": out})
	c := exec.Command(cmd.Path, cmd.Args...)
	c.Env = append(os.Environ(), "CONFORM_SIMJUDGE="+string(req))
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the simulator's program: %v\n%s", err, b)
	}
	tr, err := trace.ReadFile(filepath.Join(out, "0.jsonl"))
	if err != nil {
		res, _ := os.ReadFile(filepath.Join(out, "0.json"))
		t.Fatalf("%v: %s", err, res)
	}
	var syns []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.KindSYN && !e.Retransmit {
			syns = append(syns, e)
		}
	}
	if tr.Header.Impl != "go:acme" || tr.Header.Mode != trace.ModeSim || len(syns) != 1 || syns[0].T != 0 {
		t.Errorf("trace of %s in %s, SYNs %+v; want go:acme in the simulator, one SYN at +0 (no second attempt)", tr.Header.Impl, tr.Header.Mode, syns)
	}

	if err := onConformsGRPC(impl, "example.com/acme", "v1.86.0", "v1.85.0"); err == nil || !strings.Contains(err.Error(), "requires grpc-go v1.86.0, later than conform's v1.85.0") {
		t.Errorf("a module on a later grpc-go: %v, want a NoSimulatorError saying so", err)
	}
}

// TestBuildSimJudge_ScenarioSwitches verifies a scenario that sets gRPC
// switches: run by a program started with exactly those in its
// environment (one process per set, since grpc-go reads them once), it is
// judged, the example standing in for pick_first over shuffle-uniform-2's
// lists; asked of a program whose environment lacks them, the program
// refuses the request, naming the switch.
func TestBuildSimJudge_ScenarioSwitches(t *testing.T) {
	impl := Release{Name: GoBalancer, Module: exampleBalancer(t), Policies: "pick_first=acme_pick_first"}
	cmd, err := BuildSimJudge(context.Background(), impl, InstallEnv{Cache: testCache, Source: FindSource()})
	if err != nil {
		t.Fatal(err)
	}
	const sw = "GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG"
	run := func(withSwitch bool) (string, []byte, error) {
		out := t.TempDir()
		req, _ := json.Marshal(map[string]any{"name": "go:acme", "policies": impl.Policies, "specs": []string{"A62/shuffle-uniform-2"},
			"env": map[string]string{sw: "true"}, "out": out})
		c := exec.Command(cmd.Path, cmd.Args...)
		c.Env = append(Environ(), "CONFORM_SIMJUDGE="+string(req))
		if withSwitch {
			c.Env = append(c.Env, sw+"=true")
		}
		b, err := c.CombinedOutput()
		return out, b, err
	}
	out, b, err := run(true)
	if err != nil {
		t.Fatalf("the simulator's program: %v\n%s", err, b)
	}
	tr, err := trace.ReadFile(filepath.Join(out, "0.jsonl"))
	if err != nil {
		res, _ := os.ReadFile(filepath.Join(out, "0.json"))
		t.Fatalf("no trace for a scenario with the program's own switches (%v): %s", err, res)
	}
	if tr.Header.Impl != "go:acme" || len(tr.Events) == 0 {
		t.Errorf("trace of %q with %d events", tr.Header.Impl, len(tr.Events))
	}
	if _, b, err := run(false); err == nil || !strings.Contains(string(b), sw+"=true is not in this process's environment") {
		t.Errorf("a program started without the request's switch: %v\n%s\nwant it refused, naming %s", err, b, sw)
	}
}

// TestBuildSimJudge_PanickingBalancer verifies that a balancer that panics
// in the simulator's program ends it with the panic in its output and no
// result for the scenario, which conform then reports as an error.
func TestBuildSimJudge_PanickingBalancer(t *testing.T) {
	dir := copyDir(t, exampleBalancer(t))
	f := filepath.Join(dir, "acmepickfirst.go")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	const at = "func (b *acme) UpdateClientConnState(s balancer.ClientConnState) error {\n"
	if !strings.Contains(string(b), at) {
		t.Fatalf("%s has no %q", f, at)
	}
	if err := os.WriteFile(f, []byte(strings.Replace(string(b), at, at+"\tpanic(\"acme: boom\")\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	impl := Release{Name: GoBalancer, Module: dir, Policies: "pick_first=acme_pick_first"}
	cmd, err := BuildSimJudge(context.Background(), impl, InstallEnv{Cache: testCache, Source: FindSource()})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	req, _ := json.Marshal(map[string]any{"name": "go:boom", "policies": impl.Policies, "specs": []string{"A61/he-dropped-ipv6"}, "out": out})
	c := exec.Command(cmd.Path, cmd.Args...)
	c.Env = append(os.Environ(), "CONFORM_SIMJUDGE="+string(req))
	output, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(output), "acme: boom") {
		t.Errorf("the program: %v, output:\n%s\nwant it ended by the panic", err, output)
	}
	if _, err := os.Stat(filepath.Join(out, "0.json")); err == nil {
		t.Error("the program wrote a result for the scenario its balancer panicked in")
	}
}
