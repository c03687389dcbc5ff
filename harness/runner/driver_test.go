package runner

// Runs through driver processes (Driver), with real drivers built or
// installed into the test cache, and fake ones (shell scripts).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/drivers/java"
	"github.com/conformlab/conform/drivers/python"
	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/driver/drivertest"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/xdsserver"
)

// testCache is one driver cache for the package's tests, removed at the end.
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conform-runner-test-")
	if err != nil {
		panic(err)
	}
	testCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// install builds impl's driver into the test cache and logs how long it took.
func install(t *testing.T, impl driver.Release) driver.Command {
	t.Helper()
	start := time.Now()
	cmd, err := driver.Install(context.Background(), impl, driver.InstallEnv{Cache: testCache, Source: driver.FindSource()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installing %s took %v", impl, time.Since(start).Round(time.Millisecond))
	return cmd
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

func dumpTrace(tr *trace.Trace) string {
	if tr == nil {
		return "(no trace)"
	}
	var b strings.Builder
	for _, e := range tr.Events {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// TestRunLab_GRPCGo185_HappyEyeballs verifies grpc-go v1.85.0, built and run
// through its driver in the lab, attempts IPv4 about 250 ms after the dropped
// IPv6 (A61), answers the RPC from b1, reports channel states, and that the
// header names the implementation and its capabilities. The second build
// comes from the cache.
func TestRunLab_GRPCGo185_HappyEyeballs(t *testing.T) {
	requireLab(t)
	impl := driver.Release{Name: driver.GRPCGo, Version: "v1.85.0"}
	cold := install(t, impl)
	built := modTime(t, cold.Path)
	if cached := install(t, impl); cached.Path != cold.Path || !modTime(t, cached.Path).Equal(built) {
		t.Errorf("second install %s, want the cached %s, not rebuilt", cached.Path, cold.Path)
	}
	tr, err := Run(context.Background(), heDroppedIPv6(), Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	v6, v4 := AddrOf("b1", 0, scenario.IPv6), AddrOf("b1", 0, scenario.IPv4)
	syn6, ok6 := firstOf(tr.Events, trace.KindSYN, v6)
	syn4, ok4 := firstOf(tr.Events, trace.KindSYN, v4)
	if !ok6 || !ok4 {
		t.Fatalf("missing SYNs (v6 %v, v4 %v):\n%s", ok6, ok4, dumpTrace(tr))
	}
	gap := syn4.T - syn6.T
	t.Logf("IPv4 SYN %v after the IPv6 SYN", gap)
	if gap < 200*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("IPv4 SYN %v after IPv6 SYN, want about 250ms", gap)
	}
	if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "OK" || res.Backend != "b1" {
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
	if _, ok := firstOf(tr.Events, trace.KindPick, ""); ok {
		t.Error("a third-party grpc-go trace has policy events; the plain driver records none")
	}
}

// TestRunLab_GRPCGo185_ConfigStep_SwitchesPolicy verifies the driver
// protocol's config command: a config step naming round_robin reaches
// grpc-go's channel through the driver's resolver, recorded as
// config-update, and the RPCs after it spread where pick_first's did not.
func TestRunLab_GRPCGo185_ConfigStep_SwitchesPolicy(t *testing.T) {
	requireLab(t)
	impl := driver.Release{Name: driver.GRPCGo, Version: "v1.85.0"}
	b := scenario.New("config-switch").Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("pick_first", `{}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
		At(100*time.Millisecond, scenario.RPC("r0", scenario.WaitForReady())).
		// The switch comes once pick_first has served r0: its one
		// connection (to b1) is up, and its Happy Eyeballs timer, stopped.
		After(scenario.On("rpc-result").WithRPC("r0"), scenario.Config("round_robin", `{}`)).
		// r1…r4 judge the spread, so they wait for round_robin's connection
		// to b2 (pick_first's was to b1; b2 has one address, so its preface
		// is round_robin's unless pick_first's Happy Eyeballs reached b2,
		// which r0's answer from b1 rules out only when b1 connected first):
		// round_robin picks only READY subchannels, and grpc-go's graceful
		// switch hands over as soon as one is READY, so RPCs sent at fixed
		// times after the switch could all go to one backend when the
		// other's handshake was slower. READY follows the preface by the
		// server's SETTINGS, which the client reads: a margin of 100 ms
		// covers that; the subchannels' states are not seen from outside.
		AfterDelay(scenario.On("preface").WithBackend("b2"), 100*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady()))
	for i := 2; i <= 4; i++ {
		b.After(scenario.On("rpc-result").WithRPC(fmt.Sprintf("r%d", i-1)), scenario.RPC(fmt.Sprintf("r%d", i), scenario.WaitForReady()))
	}
	tr, err := Run(context.Background(), b.After(scenario.On("rpc-result").Times(5), scenario.Finish()).End(3*time.Second).MustBuild(),
		Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if cu, ok := firstOf(tr.Events, trace.KindConfigUpdate, ""); !ok || !strings.Contains(cu.Detail, "round_robin") {
		t.Errorf("config-update %+v, want the service config naming round_robin", cu)
	}
	served := map[string]bool{}
	for _, e := range tr.Events {
		if e.Kind == trace.KindRPCResult && e.RPC != "r0" {
			served[e.Backend] = true
		}
	}
	if !served["b1"] || !served["b2"] {
		t.Errorf("after the config step the RPCs were served by %v, want b1 and b2 (round_robin):\n%s", served, dumpTrace(tr))
	}
}

// TestRunLab_ReferenceThroughDriver_GivesPolicyEvents verifies the reference
// runs through the driver like a third party, and its recorder's events
// arrive as policy events (with picks naming the RPC).
func TestRunLab_ReferenceThroughDriver_GivesPolicyEvents(t *testing.T) {
	requireLab(t)
	install(t, driver.Release{Name: driver.Reference})
	tr, err := Run(context.Background(), heDroppedIPv6(), Driver{Impl: driver.Release{Name: driver.Reference}, Cache: testCache, Source: driver.FindSource()}, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if tr.Header.Impl != "reference" {
		t.Errorf("header impl %q", tr.Header.Impl)
	}
	for _, k := range []trace.Kind{trace.KindSubchannelNew, trace.KindSubchannelConnect, trace.KindBalancerState, trace.KindTimerStart} {
		if e, ok := firstOf(tr.Events, k, ""); !ok || e.Source != trace.SourcePolicy {
			t.Errorf("no policy %s event:\n%s", k, dumpTrace(tr))
		}
	}
	picked := false
	for _, e := range tr.Events {
		picked = picked || (e.Kind == trace.KindPick && e.RPC == "r1" && e.Subchannel != "")
	}
	if !picked {
		t.Errorf("no pick of r1 onto a subchannel:\n%s", dumpTrace(tr))
	}
	syn6, _ := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv6))
	syn4, ok := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv4))
	if gap := syn4.T - syn6.T; !ok || gap < 200*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("reference: IPv4 SYN %v after IPv6 (found %v), want about 250ms", gap, ok)
	}
	if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Backend != "b1" {
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
	impl := driver.Release{Name: driver.GRPCGo, Version: "v1.55.0"}
	install(t, impl)
	install(t, impl)
	rr := heDroppedIPv6()
	rr.Client.LBPolicy = "round_robin" // an endpoint of two addresses means something to round_robin
	_, err := Run(context.Background(), rr, Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{})
	var na *NotApplicable
	if !errors.As(err, &na) || !strings.Contains(na.Reason, "endpoints") {
		t.Fatalf("err = %v, want not-applicable for endpoints", err)
	}
	t.Logf("he-dropped-ipv6 with round_robin on v1.55.0: %v", err)
	tr, err := Run(context.Background(), flatIPv6First(time.Second), Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if tr.Header.ImplVersion != "v1.55.0" || !strings.Contains(tr.Header.Env["driver.cannot"], "endpoints") {
		t.Errorf("header %s env %v", tr.Header.ImplVersion, tr.Header.Env)
	}
	if _, ok := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv6)); !ok {
		t.Errorf("no SYN to the IPv6 address:\n%s", dumpTrace(tr))
	}
	if e, ok := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv4)); ok {
		t.Errorf("IPv4 SYN at %v: v1.55 should wait on the first address", e.T)
	}
	if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "DEADLINE_EXCEEDED" {
		t.Errorf("rpc-result %+v, want DEADLINE_EXCEEDED", res)
	}
}

// TestRunLab_GRPCGo160_EndpointsAndAddresses verifies a grpc-go of the
// releases that have resolver.State.Endpoints but whose policies still read
// Addresses (v1.58 to v1.63) gets its updates as both, as grpc-go's own
// DNS resolver sends them: its pick_first and round_robin connect and
// serve, rather than failing every RPC with "produced zero addresses" (the
// since table over v1.58.3..v1.63.2 was 40 false fails a release before).
func TestRunLab_GRPCGo160_EndpointsAndAddresses(t *testing.T) {
	requireLab(t)
	impl := driver.Release{Name: driver.GRPCGo, Version: "v1.60.1"}
	install(t, impl)
	for _, policy := range []string{"pick_first", "round_robin"} {
		s := scenario.New("endpoints-and-addresses").
			Backend("b1", scenario.Dual).
			LB(policy, `{}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4", "b1/ipv6"))).
			At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(6 * time.Second).
			MustBuild()
		tr, err := Run(context.Background(), s, Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{})
		if err != nil {
			t.Fatalf("%s: %v\n%s", policy, err, dumpTrace(tr))
		}
		if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "OK" || res.Backend != "b1" {
			t.Errorf("%s: rpc-result %+v, want OK from b1\n%s", policy, res, dumpTrace(tr))
		}
	}
}

// TestRunLab_GRPCJS_HappyEyeballs runs he-dropped-ipv6 through the grpc-js
// driver (installed from npm into the cache): the RPC is answered by b1 over
// IPv4, and the IPv4 SYN follows the dropped IPv6 SYN (A61's delay, if
// grpc-js does Happy Eyeballs; the gap is logged, not asserted: that is the
// suites' job).
func TestRunLab_GRPCJS_HappyEyeballs(t *testing.T) {
	requireLab(t)
	impl := driver.Release{Name: driver.GRPCJS, Version: driver.DefaultGRPCJS}
	tr, err := Run(context.Background(), heDroppedIPv6(), Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if tr.Header.Impl != driver.GRPCJS || tr.Header.ImplVersion != driver.DefaultGRPCJS {
		t.Errorf("header says %s %s, want %s %s", tr.Header.Impl, tr.Header.ImplVersion, driver.GRPCJS, driver.DefaultGRPCJS)
	}
	v6, v4 := AddrOf("b1", 0, scenario.IPv6), AddrOf("b1", 0, scenario.IPv4)
	syn6, ok6 := firstOf(tr.Events, trace.KindSYN, v6)
	syn4, ok4 := firstOf(tr.Events, trace.KindSYN, v4)
	if !ok6 || !ok4 {
		t.Fatalf("missing SYNs (v6 %v, v4 %v):\n%s", ok6, ok4, dumpTrace(tr))
	}
	t.Logf("grpc-js %s: IPv4 SYN %v after the IPv6 SYN", driver.DefaultGRPCJS, syn4.T-syn6.T)
	if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "OK" || res.Backend != "b1" {
		t.Errorf("rpc-result %+v, want OK from b1\n%s", res, dumpTrace(tr))
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
	tr, err := Run(context.Background(), heDroppedIPv6(), Driver{Impl: driver.Release{Name: driver.GRPCIO}, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if _, ok := firstOf(tr.Events, trace.KindDNSQuery, ""); !ok {
		t.Errorf("no dns-query event: the client did not resolve through the lab DNS\n%s", dumpTrace(tr))
	}
	if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "OK" || res.Backend != "b1" {
		t.Errorf("rpc-result %+v, want OK from b1\n%s", res, dumpTrace(tr))
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
	_, err := Run(context.Background(), s, Driver{Impl: driver.Release{Name: driver.GRPCIO}, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	var na *NotApplicable
	if !errors.As(err, &na) || !strings.Contains(na.Reason, "second resolver update") {
		t.Errorf("err = %v, want not-applicable naming the second resolver update", err)
	}
}

// xdsGood is version 1 of xdsRoundRobin: one EDS cluster behind
// round_robin with two dual-stack endpoints (IPv6 first, the IPv4 address
// as the A61 additional address). The locality has a weight: gRPC ignores
// localities without one.
func xdsGood() xds.Resources {
	return xds.Resources{
		Version:      "1",
		Listeners:    []xds.Listener{{Name: "svc.conform", RouteConfig: "rc1"}},
		RouteConfigs: []xds.RouteConfig{{Name: "rc1", Cluster: "c1"}},
		Clusters:     []xds.Cluster{{Name: "c1", Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin}},
		Endpoints: []xds.LoadAssignment{{Cluster: "c1", Priorities: []xds.Priority{{Localities: []xds.Locality{{
			Name: "z1", Weight: 1,
			Endpoints: []xds.Endpoint{
				{Addr: "b1/ipv6", AdditionalAddrs: []scenario.Addr{"b1/ipv4"}},
				{Addr: "b2/ipv6", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}},
			},
		}}}}}},
	}
}

// xdsRoundRobin runs version 1 (xdsGood): r1 waits for ready, r2…r5 follow
// one another. Version 2 turns c1 into an aggregate cluster with no
// clusters, which gRPC rejects (A37); r6 goes once the client NACKed it.
// Version 3 gives the EDS cluster an idle_timeout whose nanos are out of
// range, which A75 says to NACK: r7 goes after a second CDS NACK, r8 after
// a second CDS ACK (the client accepted it). The run ends with r7's or
// r8's result.
func xdsRoundRobin() *scenario.Scenario {
	empty := xdsGood()
	empty.Version = "2"
	empty.Clusters = []xds.Cluster{{Name: "c1", Type: xds.ClusterAggregate}}
	badIdle := xdsGood()
	badIdle.Version = "3"
	badIdle.Clusters[0].UpstreamConfig = &xds.UpstreamConfig{HTTPProtocolOptions: &xds.HTTPProtocolOptions{
		IdleTimeout: &xds.Duration{Seconds: 30, Nanos: 1_000_000_000},
	}}
	b := scenario.New("xds-rr-nack").
		Backend("b1", scenario.Dual).
		Backend("b2", scenario.Dual).
		XDS("svc.conform").
		At(0, scenario.ServeXDS(xdsGood())).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		// r2…r5 judge the spread over both backends, so they wait for both
		// connections: round_robin picks only READY subchannels, and b2's
		// could still be in its HTTP/2 handshake after r1 (CI once saw all
		// five on b1, b2's preface not yet arrived). READY follows the
		// preface by the server's SETTINGS, which the client reads: a margin
		// of 100 ms covers that; the subchannel's state itself is not seen
		// from outside. (Two prefaces are one per backend unless Happy
		// Eyeballs connected a backend over both families, which takes a
		// first attempt 250 ms without an answer; waiting for b2's alone
		// would race b1's instead.)
		AfterDelay(scenario.On("preface").Times(2), 100*time.Millisecond, scenario.RPC("r2", scenario.Deadline(time.Second)))
	for i, id := range []string{"r3", "r4", "r5"} {
		prev := []string{"r2", "r3", "r4"}[i]
		b = b.After(scenario.On("rpc-result").WithRPC(prev), scenario.RPC(id, scenario.Deadline(time.Second)))
	}
	rpc := func(id string) scenario.StartRPC { return scenario.RPC(id, scenario.Deadline(time.Second)) }
	return b.After(scenario.On("rpc-result").WithRPC("r5"), scenario.ServeXDS(empty)).
		After(scenario.On("xds-request").WithXDS("NACK", "CDS"), rpc("r6")).
		After(scenario.On("rpc-result").WithRPC("r6"), scenario.ServeXDS(badIdle)).
		After(scenario.On("xds-request").WithXDS("NACK", "CDS").Times(2), rpc("r7")).
		After(scenario.On("xds-request").WithXDS("ACK", "CDS").Times(2), rpc("r8")).
		After(scenario.On("rpc-result").WithRPC("r7"), scenario.Finish()).
		After(scenario.On("rpc-result").WithRPC("r8"), scenario.Finish()).
		End(15 * time.Second).
		MustBuild()
}

// xdsRequests are the trace's xds-request events of one kind (request,
// ACK, NACK) for one short type (LDS…EDS).
func xdsRequests(evs []trace.Event, kind, typ string) []trace.Event {
	var out []trace.Event
	for _, e := range evs {
		if e.Kind == trace.KindXDSRequest && e.XDS == kind && xdsserver.ShortType(e.TypeURL) == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestRunLab_GRPCGo185_XDS_RoundRobinAndNACKs verifies grpc-go v1.85.0's
// own xDS client, through the Go driver's xDS build, against the lab's
// management server: the client ACKs version 1 of LDS, RDS, CDS and EDS,
// round_robin over the two dual-stack endpoints answers from both
// backends, an aggregate cluster without clusters is NACKed with version 1
// kept and the channel still answering, and its answer to an out-of-range
// idle_timeout is recorded (v1.85.0 ACKs it: it has no A75).
func TestRunLab_GRPCGo185_XDS_RoundRobinAndNACKs(t *testing.T) {
	runXDSRoundRobin(t, grpcGoXDS(t, "v1.85.0"))
}

// TestRunLab_GRPCGo155_XDS_RoundRobinAndNACKs is the same for the oldest
// grpc-go the xDS build is made for (xdsSince): before A61, it connects to
// each endpoint's first address only.
func TestRunLab_GRPCGo155_XDS_RoundRobinAndNACKs(t *testing.T) {
	runXDSRoundRobin(t, grpcGoXDS(t, "v1.55.0"))
}

// TestRunLab_GRPCJS_XDS_RoundRobinAndNACKs is the same for grpc-js with
// @grpc/grpc-js-xds: the install is an entry of its own, with grpc-js-xds
// beside grpc-js, and the driver says it can express xds.
func TestRunLab_GRPCJS_XDS_RoundRobinAndNACKs(t *testing.T) {
	requireLab(t)
	impl := driver.Release{Name: driver.GRPCJS, Version: driver.DefaultGRPCJS}
	cmd, err := driver.Install(context.Background(), impl, driver.InstallEnv{Cache: testCache, XDS: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := cmd.Args[len(cmd.Args)-1]
	if filepath.Base(dir) != "grpc-js-xds@"+driver.DefaultGRPCJS {
		t.Errorf("xDS install in %s, want a cache entry of its own (grpc-js-xds@%s)", dir, driver.DefaultGRPCJS)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@grpc", "grpc-js-xds", "package.json")); err != nil {
		t.Errorf("no @grpc/grpc-js-xds in the xDS install: %v", err)
	}
	runXDSRoundRobin(t, impl)
}

// grpcGoXDS builds the xDS driver for grpc-go version, checks the second
// install comes from the cache, and returns the implementation.
func grpcGoXDS(t *testing.T, version string) driver.Release {
	requireLab(t)
	impl := driver.Release{Name: driver.GRPCGo, Version: version}
	env := driver.InstallEnv{Cache: testCache, XDS: true}
	start := time.Now()
	cold, err := driver.Install(context.Background(), impl, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installing %s (xDS build) took %v", impl, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(cold.Path, "grpc-go-xds@"+version) {
		t.Errorf("xDS build at %s, want a cache entry of its own", cold.Path)
	}
	built := modTime(t, cold.Path)
	if cached, err := driver.Install(context.Background(), impl, env); err != nil || cached.Path != cold.Path || !modTime(t, cached.Path).Equal(built) {
		t.Errorf("second install %s (%v), want the cached %s, not rebuilt", cached.Path, err, cold.Path)
	}
	return impl
}

// runXDSRoundRobin runs xdsRoundRobin through impl's xDS driver and checks
// the trace.
func runXDSRoundRobin(t *testing.T, impl driver.Release) {
	start := time.Now()
	tr, err := Run(context.Background(), xdsRoundRobin(), Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	t.Logf("RunLab (lab up, xDS server, driver, scenario, teardown): %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if testing.Verbose() {
		t.Logf("trace:\n%s", dumpTrace(tr))
	}
	if !strings.Contains(tr.Header.Env["driver.can"], "xds") {
		t.Errorf("header env %v: the xDS build should say it can express xds", tr.Header.Env)
	}

	// Version 1 ACKed, type by type.
	for _, typ := range []string{"LDS", "RDS", "CDS", "EDS"} {
		acks := xdsRequests(tr.Events, trace.XDSACK, typ)
		if len(acks) == 0 || acks[0].Version != "1" || acks[0].Node != driverXDSNode {
			t.Errorf("%s: ACKs %v, want version 1 ACKed by node %q", typ, acks, driverXDSNode)
		}
		if n := xdsRequests(tr.Events, trace.XDSNACK, typ); typ != "CDS" && len(n) > 0 {
			t.Errorf("%s NACKed: %v", typ, n)
		}
	}

	// Round robin over both backends; the first RPC served measures how long
	// the client takes from its channel's creation (time zero) through the
	// xDS exchange to a backend.
	backends := map[string]bool{}
	results := map[string]trace.Event{}
	for _, e := range tr.Events {
		if e.Kind != trace.KindRPCResult {
			continue
		}
		results[e.RPC] = e
		if e.Code != "OK" {
			t.Errorf("%s: %s %s", e.RPC, e.Code, e.Err)
		}
		if slices.Contains([]string{"r1", "r2", "r3", "r4", "r5"}, e.RPC) {
			backends[e.Backend] = true
		}
	}
	if !backends["b1"] || !backends["b2"] {
		t.Errorf("r1…r5 answered by %v, want both b1 and b2 (round_robin):\n%s", backends, dumpTrace(tr))
	}
	// How soon is logged, not judged: r1's 5 s deadline bounds a client
	// stuck behind a timer, and how fast the xDS exchange is belongs to a
	// benchmark (suites/a75, BenchmarkXDSFirstRPCLab), not to a timed test a
	// loaded machine can fail.
	if served, ok := firstOf(tr.Events, trace.KindRPCServed, ""); ok {
		t.Logf("channel created → first RPC served: %v (by %s on %s)", served.T, served.Backend, served.Addr)
	} else {
		t.Errorf("no rpc-served event:\n%s", dumpTrace(tr))
	}

	// Version 2, the empty aggregate: NACKed, version 1 kept (r6 answered).
	nacks := xdsRequests(tr.Events, trace.XDSNACK, "CDS")
	acks := xdsRequests(tr.Events, trace.XDSACK, "CDS")
	if len(nacks) == 0 {
		t.Fatalf("version 2 (an aggregate cluster without clusters) was not NACKed:\n%s", dumpTrace(tr))
	}
	n := nacks[0]
	t.Logf("version 2 (empty aggregate): %s", n.String())
	if n.Version != "1" || n.Detail != "rejected 2" || n.Err == "" || n.Code == "" {
		t.Errorf("NACK %s: want version_info 1 (kept), rejecting version 2, with an error code and message", n.String())
	}
	if _, ok := results["r6"]; !ok {
		t.Errorf("r6 (after the NACK) has no result:\n%s", dumpTrace(tr))
	}

	// Version 3, the out-of-range idle_timeout: A75 says NACK. grpc-go
	// (v1.85.0 and older) does not read upstream_config (no A75) and ACKs
	// it: the trace shows whichever it did, with the right versions.
	switch {
	case len(nacks) > 1:
		t.Logf("version 3 (idle_timeout nanos 1e9): NACKed: %s", nacks[1].String())
		if nacks[1].Version != "1" || nacks[1].Detail != "rejected 3" {
			t.Errorf("NACK %s: want version_info 1, rejecting 3", nacks[1].String())
		}
	case len(acks) > 1:
		t.Logf("version 3 (idle_timeout nanos 1e9): ACCEPTED by %s (A75 says NACK): %s", impl, acks[1].String())
		if acks[1].Version != "3" {
			t.Errorf("second CDS ACK %s: want version 3", acks[1].String())
		}
	default:
		t.Errorf("no answer to version 3's CDS:\n%s", dumpTrace(tr))
	}
	if len(results) != 7 {
		t.Errorf("%d RPC results, want r1…r6 and one of r7, r8:\n%s", len(results), dumpTrace(tr))
	}
}

// TestRunLab_XDS_DriverWithoutXDS_NotApplicable verifies a driver whose
// hello lacks xds makes an xds scenario not-applicable ("cannot express
// xds"), and that it was started with the lab server's bootstrap in its
// environment (and the GRPC_XDS_BOOTSTRAP conform itself had, unset).
func TestRunLab_XDS_DriverWithoutXDS_NotApplicable(t *testing.T) {
	requireLab(t)
	dir := t.TempDir()
	t.Setenv("GRPC_XDS_BOOTSTRAP", "/nonexistent/bootstrap.json")
	drv := driver.Command{Path: drivertest.Script(t, `printf '%s' "$GRPC_XDS_BOOTSTRAP_CONFIG" > `+dir+`/config
printf '%s' "${GRPC_XDS_BOOTSTRAP-unset}" > `+dir+`/file
read line
id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
echo '{"id":'$id',"ev":"ok","hello":{"protocol":1,"impl":"fake","version":"1","can":{"endpoints":true,"mixed_families":true,"service_config":true,"wait_for_ready":true,"xds":false},"observes":"every-change"}}'
cat >/dev/null`)}
	var gotXDS []bool
	driver.Register("fake-no-xds", driver.InstallerFunc(func(_ context.Context, _ driver.Release, env driver.InstallEnv) (driver.Command, error) {
		gotXDS = append(gotXDS, env.XDS)
		return drv, nil
	}))
	_, err := Run(context.Background(), xdsRoundRobin(), Driver{Impl: driver.Release{Name: "fake-no-xds"}, Cache: t.TempDir()}, trace.ModeLab, Options{})
	var na *NotApplicable
	if !errors.As(err, &na) || na.Reason != "fake 1 cannot express xds" {
		t.Fatalf("err = %v, want not-applicable: fake 1 cannot express xds", err)
	}
	if !slices.Equal(gotXDS, []bool{true}) {
		t.Errorf("installer asked for XDS %v, want [true]", gotXDS)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil || string(cfg) != string(xdsserver.Bootstrap(driverXDSNode)) {
		t.Errorf("driver's GRPC_XDS_BOOTSTRAP_CONFIG = %q (%v), want %s", cfg, err, xdsserver.Bootstrap(driverXDSNode))
	}
	if file, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || string(file) != "unset" {
		t.Errorf("driver's GRPC_XDS_BOOTSTRAP = %q (%v), want it unset (C-core reads an empty one as a file name)", file, err)
	}
}

// TestRunLab_GRPCJS_XDS_LogicalDNS runs a LOGICAL_DNS cluster through
// grpc-js-xds: the driver's system resolver is the lab's DNS, which serves
// the resolve step's address under the cluster's name, so the RPC reaches
// b1 and the lab DNS records the driver's query for that name.
func TestRunLab_GRPCJS_XDS_LogicalDNS(t *testing.T) {
	requireLab(t)
	s := scenario.New("xds-logical-dns").
		Backend("b1", scenario.IPv4Only).
		XDS("svc.conform").
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(0, scenario.ServeXDS(xds.Resources{
			Listeners:    []xds.Listener{{Name: "svc.conform", RouteConfig: "rc1"}},
			RouteConfigs: []xds.RouteConfig{{Name: "rc1", Cluster: "dns1"}},
			Clusters:     []xds.Cluster{{Name: "dns1", Type: xds.ClusterLogicalDNS, DNSHost: "dns1.conform"}},
		})).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
	tr, err := Run(context.Background(), s, Driver{Impl: driver.Release{Name: driver.GRPCJS, Version: driver.DefaultGRPCJS}, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	r, ok := firstOf(tr.Events, trace.KindRPCResult, "")
	if !ok || r.Code != "OK" || r.Backend != "b1" {
		t.Errorf("r1: %+v, want OK from b1 (dns1.conform resolved by the lab DNS):\n%s", r, dumpTrace(tr))
	}
	queried := slices.ContainsFunc(tr.Events, func(e trace.Event) bool {
		return e.Kind == trace.KindDNSQuery && strings.Contains(e.Detail, "dns1.conform")
	})
	if !queried {
		t.Errorf("no dns-query for dns1.conform: the driver did not ask the lab DNS:\n%s", dumpTrace(tr))
	}
}

// TestRunLab_DriverGetsTheScenarioEnvOnly verifies a driver process runs
// with the scenario's gRPC switches in its environment, and without the gRPC
// settings or proxies conform's own environment has (its gRPC logging
// settings pass).
func TestRunLab_DriverGetsTheScenarioEnvOnly(t *testing.T) {
	requireLab(t)
	dir := t.TempDir()
	t.Setenv(scenario.EnvPickFirstLBConfig, "false")
	t.Setenv("GRPC_DNS_RESOLVER", "native")
	t.Setenv("https_proxy", "http://proxy.example:3128")
	t.Setenv("GRPC_TRACE", "xds_client")
	drv := driver.Command{Path: drivertest.Script(t, `printf '%s' "${`+scenario.EnvAggregateClusterBackwardCompat+`-unset}" > `+dir+`/compat
printf '%s' "${`+scenario.EnvPickFirstLBConfig+`-unset}" > `+dir+`/pickfirst
printf '%s' "${GRPC_DNS_RESOLVER-unset}" > `+dir+`/dnsresolver
printf '%s' "${https_proxy-unset}" > `+dir+`/proxy
printf '%s' "${GRPC_TRACE-unset}" > `+dir+`/trace
read line
id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
echo '{"id":'$id',"ev":"ok","hello":{"protocol":1,"impl":"fake","version":"1","can":{},"observes":"every-change"}}'
cat >/dev/null`)}
	driver.Register("fake-env", driver.InstallerFunc(func(context.Context, driver.Release, driver.InstallEnv) (driver.Command, error) { return drv, nil }))
	s := scenario.New("env-to-driver").
		Backend("b1", scenario.Dual).
		Env(scenario.EnvAggregateClusterBackwardCompat, "true").
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		End(time.Second).
		MustBuild()
	_, err := Run(context.Background(), s, Driver{Impl: driver.Release{Name: "fake-env"}, Cache: t.TempDir()}, trace.ModeLab, Options{})
	var na *NotApplicable
	if !errors.As(err, &na) {
		t.Fatalf("err = %v, want not-applicable (the fake can express nothing)", err)
	}
	for file, want := range map[string]string{"compat": "true", "pickfirst": "unset", "dnsresolver": "unset", "proxy": "unset", "trace": "xds_client"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(got) != want {
			t.Errorf("driver's %s switch = %q (%v), want %q", file, got, err, want)
		}
	}
}

// TestRunLab_ReferenceRefusesEnvItCannotHonour verifies the reference's
// driver is not started with a switch it has no option for: the run fails,
// naming the variable.
func TestRunLab_ReferenceRefusesEnvItCannotHonour(t *testing.T) {
	s := scenario.New("env-reference").
		Backend("b1", scenario.IPv4Only).
		Env(scenario.EnvXDSDualstackEndpoints, "false").
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		End(time.Second).
		MustBuild()
	_, err := Run(context.Background(), s, Driver{Impl: driver.Release{Name: driver.Reference}, Cache: t.TempDir()}, trace.ModeLab, Options{})
	if err == nil || !strings.Contains(err.Error(), "client.env."+scenario.EnvXDSDualstackEndpoints) {
		t.Fatalf("err = %v, want one naming client.env.%s", err, scenario.EnvXDSDualstackEndpoints)
	}
}

// TestRunLab_GRPCJava_NoHappyEyeballs runs he-dropped-ipv6, with a 2 s
// deadline, through the grpc-java driver (compiled against Debian's
// libgrpc-java into the cache): the conform resolver gives pick_first one
// endpoint of two addresses, and grpc-java 1.41, which predates A61's
// Happy Eyeballs, waits on the dropped IPv6 address without trying IPv4
// within the deadline.
func TestRunLab_GRPCJava_NoHappyEyeballs(t *testing.T) {
	requireLab(t)
	sys, err := java.Check(context.Background())
	if err != nil {
		t.Skipf("grpc-java driver: %v", err)
	}
	impl := driver.Release{Name: driver.GRPCJava}
	install(t, impl)
	s := scenario.New("he-dropped-ipv6-deadline").
		Backend("b1", scenario.Dual).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(2*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(30 * time.Second).
		MustBuild()
	tr, err := Run(context.Background(), s, Driver{Impl: impl, Cache: testCache}, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if tr.Header.Impl != driver.GRPCJava || tr.Header.ImplVersion != sys.GRPCVersion() || tr.Header.Env["driver.observes"] != "every-change" {
		t.Errorf("header says %s %s, env %v; want %s %s observing every change", tr.Header.Impl, tr.Header.ImplVersion, tr.Header.Env, driver.GRPCJava, sys.GRPCVersion())
	}
	up, _ := firstOf(tr.Events, trace.KindResolverUpdate, "")
	if syn, ok := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv6)); !ok {
		t.Errorf("no SYN to the IPv6 address:\n%s", dumpTrace(tr))
	} else {
		t.Logf("grpc-java %s: first SYN %v after the resolver update", sys.GRPCVersion(), syn.T-up.T)
	}
	if e, ok := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv4)); ok {
		t.Errorf("IPv4 SYN at %v: grpc-java 1.41 should wait on the first address", e.T)
	}
	if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Code != "DEADLINE_EXCEEDED" {
		t.Errorf("rpc-result %+v, want DEADLINE_EXCEEDED\n%s", res, dumpTrace(tr))
	}
}
