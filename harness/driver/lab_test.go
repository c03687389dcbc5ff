package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conformlab/conform/drivers/python"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// testCache is one cache for the package's tests, removed at the end.
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conform-driver-test-")
	if err != nil {
		panic(err)
	}
	testCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func requireLab(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("driver: the lab needs root (CAP_NET_ADMIN) to create network namespaces")
	}
}

func heDroppedIPv6() *scenario.Scenario {
	return scenario.New("he-dropped-ipv6").
		Backend("b1", scenario.Dual).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(30 * time.Second).
		MustBuild()
}

// flatIPv6First is he-dropped-ipv6 as a flat address list (one address per
// endpoint), for drivers without endpoints; the RPC has a deadline.
func flatIPv6First(deadline time.Duration) *scenario.Scenario {
	rpc := scenario.RPC("r1")
	if deadline > 0 {
		rpc = scenario.RPC("r1", scenario.Deadline(deadline))
	}
	return scenario.New("he-dropped-ipv6-flat").
		Backend("b1", scenario.Dual).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6"), scenario.EP("b1/ipv4"))).
		At(10*time.Millisecond, rpc).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(30 * time.Second).
		MustBuild()
}

func first(evs []trace.Event, kind trace.Kind, addr string) (trace.Event, bool) {
	for _, e := range evs {
		if e.Kind == kind && (addr == "" || e.Addr == addr) {
			return e, true
		}
	}
	return trace.Event{}, false
}

func dump(tr *trace.Trace) string {
	if tr == nil {
		return "(no trace)"
	}
	var b strings.Builder
	for _, e := range tr.Events {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// install builds impl's driver into the test cache and logs how long it took.
func install(t *testing.T, impl Impl) Command {
	t.Helper()
	start := time.Now()
	cmd, err := Install(context.Background(), impl, InstallEnv{Cache: testCache, Source: FindSource()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installing %s took %v", impl, time.Since(start).Round(time.Millisecond))
	return cmd
}

// TestRunLab_GRPCGo185_HappyEyeballs verifies grpc-go v1.85.0, built and run
// through its driver in the lab, attempts IPv4 about 250 ms after the dropped
// IPv6 (A61), answers the RPC from b1, reports channel states, and that the
// header names the implementation and its capabilities. The second build
// comes from the cache.
func TestRunLab_GRPCGo185_HappyEyeballs(t *testing.T) {
	requireLab(t)
	impl := Impl{GRPCGo, "v1.85.0"}
	cold := install(t, impl)
	built := modTime(t, cold.Path)
	if cached := install(t, impl); cached.Path != cold.Path || !modTime(t, cached.Path).Equal(built) {
		t.Errorf("second install %s, want the cached %s, not rebuilt", cached.Path, cold.Path)
	}
	tr, err := RunLab(context.Background(), heDroppedIPv6(), impl, Options{Seed: 1, Cache: testCache})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr))
	}
	v6, v4 := runner.AddrOf("b1", 0, scenario.IPv6), runner.AddrOf("b1", 0, scenario.IPv4)
	syn6, ok6 := first(tr.Events, trace.KindSYN, v6)
	syn4, ok4 := first(tr.Events, trace.KindSYN, v4)
	if !ok6 || !ok4 {
		t.Fatalf("missing SYNs (v6 %v, v4 %v):\n%s", ok6, ok4, dump(tr))
	}
	gap := syn4.T - syn6.T
	t.Logf("IPv4 SYN %v after the IPv6 SYN", gap)
	if gap < 200*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("IPv4 SYN %v after IPv6 SYN, want about 250ms", gap)
	}
	if res, ok := first(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "OK" || res.Backend != "b1" {
		t.Errorf("rpc-result %+v, want OK from b1", res)
	}
	var states []string
	for _, e := range tr.Events {
		if e.Kind == trace.KindChannelState {
			states = append(states, e.State)
		}
	}
	if got := strings.Join(states, " "); !strings.HasPrefix(got, "CONNECTING READY") || !strings.HasSuffix(got, "SHUTDOWN") {
		t.Errorf("channel states %q, want CONNECTING READY … SHUTDOWN", got)
	}
	h := tr.Header
	if h.Impl != "grpc-go" || h.ImplVersion != "v1.85.0" || !strings.Contains(h.Env["driver.can"], "endpoints") || h.Env["driver.observes"] != "every-change" {
		t.Errorf("header %s %s env %v", h.Impl, h.ImplVersion, h.Env)
	}
	if _, ok := first(tr.Events, trace.KindPick, ""); ok {
		t.Error("a third-party grpc-go trace has policy events; the plain driver records none")
	}
}

// TestRunLab_ReferenceThroughDriver_GivesPolicyEvents verifies the reference
// runs through the driver like a third party, and its recorder's events
// arrive as policy events (with picks naming the RPC).
func TestRunLab_ReferenceThroughDriver_GivesPolicyEvents(t *testing.T) {
	requireLab(t)
	install(t, Impl{Name: Reference})
	tr, err := RunLab(context.Background(), heDroppedIPv6(), Impl{Name: Reference}, Options{Seed: 1, Cache: testCache, Source: FindSource()})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr))
	}
	if tr.Header.Impl != "reference" {
		t.Errorf("header impl %q", tr.Header.Impl)
	}
	for _, k := range []trace.Kind{trace.KindSubchannelNew, trace.KindSubchannelConnect, trace.KindBalancerState, trace.KindTimerStart} {
		if e, ok := first(tr.Events, k, ""); !ok || e.Source != trace.SourcePolicy {
			t.Errorf("no policy %s event:\n%s", k, dump(tr))
		}
	}
	picked := false
	for _, e := range tr.Events {
		picked = picked || (e.Kind == trace.KindPick && e.RPC == "r1" && e.Subchannel != "")
	}
	if !picked {
		t.Errorf("no pick of r1 onto a subchannel:\n%s", dump(tr))
	}
	syn6, _ := first(tr.Events, trace.KindSYN, runner.AddrOf("b1", 0, scenario.IPv6))
	syn4, ok := first(tr.Events, trace.KindSYN, runner.AddrOf("b1", 0, scenario.IPv4))
	if gap := syn4.T - syn6.T; !ok || gap < 200*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("reference: IPv4 SYN %v after IPv6 (found %v), want about 250ms", gap, ok)
	}
	if res, ok := first(tr.Events, trace.KindRPCResult, ""); !ok || res.Backend != "b1" {
		t.Errorf("rpc-result %+v, want OK from b1", res)
	}
}

// TestRunLab_GRPCGo155_NoEndpointsNoHappyEyeballs verifies an old grpc-go
// (before endpoints) builds from the module proxy, says "endpoints": false,
// makes the dual-stack-endpoint scenario not-applicable, and, given flat
// addresses, waits on the dropped IPv6 without trying IPv4 within the RPC's
// 1 s deadline (no Happy Eyeballs).
func TestRunLab_GRPCGo155_NoEndpointsNoHappyEyeballs(t *testing.T) {
	requireLab(t)
	if err := checkModuleExists(context.Background(), t.TempDir(), "google.golang.org/grpc@v1.55.0"); err != nil {
		t.Skipf("driver: grpc-go v1.55.0 is not reachable: %v", err)
	}
	impl := Impl{GRPCGo, "v1.55.0"}
	install(t, impl)
	install(t, impl)
	rr := heDroppedIPv6()
	rr.Client.LBPolicy = "round_robin" // an endpoint of two addresses means something to round_robin
	_, err := RunLab(context.Background(), rr, impl, Options{Cache: testCache})
	var na *NotApplicable
	if !errors.As(err, &na) || !strings.Contains(na.Reason, "endpoints") {
		t.Fatalf("err = %v, want not-applicable for endpoints", err)
	}
	t.Logf("he-dropped-ipv6 with round_robin on v1.55.0: %v", err)
	tr, err := RunLab(context.Background(), flatIPv6First(time.Second), impl, Options{Cache: testCache})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr))
	}
	if tr.Header.ImplVersion != "v1.55.0" || !strings.Contains(tr.Header.Env["driver.cannot"], "endpoints") {
		t.Errorf("header %s env %v", tr.Header.ImplVersion, tr.Header.Env)
	}
	if _, ok := first(tr.Events, trace.KindSYN, runner.AddrOf("b1", 0, scenario.IPv6)); !ok {
		t.Errorf("no SYN to the IPv6 address:\n%s", dump(tr))
	}
	if e, ok := first(tr.Events, trace.KindSYN, runner.AddrOf("b1", 0, scenario.IPv4)); ok {
		t.Errorf("IPv4 SYN at %v: v1.55 should wait on the first address", e.T)
	}
	if res, ok := first(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "DEADLINE_EXCEEDED" {
		t.Errorf("rpc-result %+v, want DEADLINE_EXCEEDED", res)
	}
}

// TestInstall_UnknownGRPCGoVersion_SaysSo verifies a version the module
// proxy does not have is reported as such.
func TestInstall_UnknownGRPCGoVersion_SaysSo(t *testing.T) {
	if err := checkModuleExists(context.Background(), t.TempDir(), "google.golang.org/grpc@v1.55.0"); err != nil {
		t.Skipf("driver: the module proxy is not reachable: %v", err)
	}
	_, err := Install(context.Background(), Impl{GRPCGo, "v1.999.0"}, InstallEnv{Cache: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not available from the module proxy") {
		t.Errorf("err = %v, want it to say the version is not on the proxy", err)
	}
}

// modTime is when path was last written: a cached driver is not rewritten.
func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// fakeDriver writes a shell script standing in for a driver.
func fakeDriver(t *testing.T, script string) Command {
	p := filepath.Join(t.TempDir(), "driver.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Command{Path: p}
}

// TestStart_BrokenDrivers_ErrorWithStderrTail verifies that a driver that
// crashes, hangs or prints garbage gives an error carrying its stderr tail,
// and leaves no process behind.
func TestStart_BrokenDrivers_ErrorWithStderrTail(t *testing.T) {
	requireLab(t)
	lab, err := netlab.Start(context.Background(), netlab.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	for name, c := range map[string]struct{ script, want string }{
		"crash":   {`echo "panic: boom in the driver" >&2; exit 2`, "exit status 2"},
		"hang":    {`echo "waiting forever" >&2; exec sleep 3600`, "no reply within"},
		"garbage": {`read cmd; echo "waiting forever" >&2; echo "this is not json"; exec sleep 3600`, "not the protocol"},
		"bad-ev":  {`read cmd; echo "waiting forever" >&2; echo '{"ev":"teleport"}'; exec sleep 3600`, "unknown or incomplete event"},
	} {
		t.Run(name, func(t *testing.T) {
			var pid int
			_, err := startFake(lab, fakeDriver(t, c.script), &pid)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--- driver stderr (tail) ---\n") {
				t.Fatalf("err = %v, want %q with the stderr tail", err, c.want)
			}
			if !strings.Contains(err.Error(), "boom") && !strings.Contains(err.Error(), "waiting forever") {
				t.Errorf("the error lacks the driver's stderr: %v", err)
			}
			if e := syscall.Kill(-pid, 0); !errors.Is(e, syscall.ESRCH) {
				t.Errorf("process group %d still exists after the error (kill: %v)", pid, e)
			}
		})
	}
}

// startFake starts a fake driver with a short command timeout and notes
// its pid.
func startFake(lab *netlab.Lab, c Command, pid *int) (*Process, error) {
	p := newProcess(ProcessOptions{Now: lab.Now, Record: func(trace.Event) {}, CommandTimeout: 500 * time.Millisecond})
	if err := p.start(lab, c); err != nil {
		return nil, err
	}
	*pid = p.Pid()
	var h reply
	if err := p.command(map[string]any{"op": "hello"}, &h); err != nil {
		return nil, err
	}
	return p, nil
}

// TestRunLab_GRPCJS_HappyEyeballs runs he-dropped-ipv6 through the grpc-js
// driver (installed from npm into the cache): the RPC is answered by b1 over
// IPv4, and the IPv4 SYN follows the dropped IPv6 SYN (A61's delay, if
// grpc-js does Happy Eyeballs; the gap is logged, not asserted: that is the
// suites' job).
func TestRunLab_GRPCJS_HappyEyeballs(t *testing.T) {
	requireLab(t)
	impl := Impl{GRPCJS, DefaultGRPCJS}
	tr, err := RunLab(context.Background(), heDroppedIPv6(), impl, Options{Seed: 1, Cache: testCache})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr))
	}
	if tr.Header.Impl != GRPCJS || tr.Header.ImplVersion != DefaultGRPCJS {
		t.Errorf("header says %s %s, want %s %s", tr.Header.Impl, tr.Header.ImplVersion, GRPCJS, DefaultGRPCJS)
	}
	v6, v4 := runner.AddrOf("b1", 0, scenario.IPv6), runner.AddrOf("b1", 0, scenario.IPv4)
	syn6, ok6 := first(tr.Events, trace.KindSYN, v6)
	syn4, ok4 := first(tr.Events, trace.KindSYN, v4)
	if !ok6 || !ok4 {
		t.Fatalf("missing SYNs (v6 %v, v4 %v):\n%s", ok6, ok4, dump(tr))
	}
	t.Logf("grpc-js %s: IPv4 SYN %v after the IPv6 SYN", DefaultGRPCJS, syn4.T-syn6.T)
	if res, ok := first(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "OK" || res.Backend != "b1" {
		t.Errorf("rpc-result %+v, want OK from b1\n%s", res, dump(tr))
	}
}

// TestRunLab_GRPCIO_ThroughLabDNS runs he-dropped-ipv6 through the grpcio
// driver (C-core), whose addresses come from the lab DNS: the channel is
// created with a dns:// target, the DNS queries are in the trace, and the
// RPC is answered by b1 (over IPv4: its IPv6 address drops SYNs).
func TestRunLab_GRPCIO_ThroughLabDNS(t *testing.T) {
	requireLab(t)
	if _, err := python.Check(context.Background()); err != nil {
		t.Skipf("grpcio driver: %v", err)
	}
	tr, err := RunLab(context.Background(), heDroppedIPv6(), Impl{Name: GRPCIO}, Options{Seed: 1, Cache: testCache})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr))
	}
	if _, ok := first(tr.Events, trace.KindDNSQuery, ""); !ok {
		t.Errorf("no dns-query event: the client did not resolve through the lab DNS\n%s", dump(tr))
	}
	if res, ok := first(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "OK" || res.Backend != "b1" {
		t.Errorf("rpc-result %+v, want OK from b1\n%s", res, dump(tr))
	}
	if tr.Header.Env["driver.can"] == "" || !strings.Contains(tr.Header.Env["driver.cannot"], "resolver") {
		t.Errorf("header env %v should say the driver cannot host the resolver", tr.Header.Env)
	}
}

// TestRunLab_GRPCIO_SecondUpdateNotApplicable verifies that a scenario
// pushing a second resolver update is not-applicable for a DNS-only driver,
// with the reason.
func TestRunLab_GRPCIO_SecondUpdateNotApplicable(t *testing.T) {
	requireLab(t)
	if _, err := python.Check(context.Background()); err != nil {
		t.Skipf("grpcio driver: %v", err)
	}
	s := scenario.New("two-updates").Backend("b1", scenario.Dual).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(time.Second, scenario.Resolve(scenario.EP("b1/ipv6"))).
		End(2 * time.Second).MustBuild()
	_, err := RunLab(context.Background(), s, Impl{Name: GRPCIO}, Options{Seed: 1, Cache: testCache})
	var na *NotApplicable
	if !errors.As(err, &na) || !strings.Contains(na.Reason, "second resolver update") {
		t.Errorf("err = %v, want not-applicable naming the second resolver update", err)
	}
}
