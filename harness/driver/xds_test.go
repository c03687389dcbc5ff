package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/xdsserver"
)

// xdsGood is version 1 of xdsRoundRobin: one EDS cluster behind
// round_robin with two dual-stack endpoints (IPv6 first, the IPv4 address
// as the A61 additional address). The locality has a weight: gRPC ignores
// localities without one.
func xdsGood() scenario.XDSResources {
	return scenario.XDSResources{
		Version:      "1",
		Listeners:    []scenario.XDSListener{{Name: "svc.conform", RouteConfig: "rc1"}},
		RouteConfigs: []scenario.XDSRouteConfig{{Name: "rc1", Cluster: "c1"}},
		Clusters:     []scenario.XDSCluster{{Name: "c1", Type: scenario.ClusterEDS, LBPolicy: scenario.XDSRoundRobin}},
		Endpoints: []scenario.XDSLoadAssignment{{Cluster: "c1", Priorities: []scenario.XDSPriority{{Localities: []scenario.XDSLocality{{
			Name: "z1", Weight: 1,
			Endpoints: []scenario.XDSEndpoint{
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
	empty.Clusters = []scenario.XDSCluster{{Name: "c1", Type: scenario.ClusterAggregate}}
	badIdle := xdsGood()
	badIdle.Version = "3"
	badIdle.Clusters[0].UpstreamConfig = &scenario.XDSUpstreamConfig{HTTPProtocolOptions: &scenario.XDSHTTPProtocolOptions{
		IdleTimeout: &scenario.XDSDuration{Seconds: 30, Nanos: 1_000_000_000},
	}}
	b := scenario.New("xds-rr-nack").
		Backend("b1", scenario.Dual).
		Backend("b2", scenario.Dual).
		XDS("svc.conform").
		At(0, xdsGood()).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second)))
	for i, id := range []string{"r2", "r3", "r4", "r5"} {
		prev := []string{"r1", "r2", "r3", "r4"}[i]
		b = b.After(scenario.On("rpc-result").WithRPC(prev), scenario.RPC(id, scenario.Deadline(time.Second)))
	}
	rpc := func(id string) scenario.StartRPC { return scenario.RPC(id, scenario.Deadline(time.Second)) }
	return b.After(scenario.On("rpc-result").WithRPC("r5"), empty).
		After(scenario.On("xds-request").WithXDS("NACK", "CDS"), rpc("r6")).
		After(scenario.On("rpc-result").WithRPC("r6"), badIdle).
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
	runXDSRoundRobin(t, grpcGoXDS(t, xdsSince))
}

// TestRunLab_GRPCJS_XDS_RoundRobinAndNACKs is the same for grpc-js with
// @grpc/grpc-js-xds: the install is an entry of its own, with grpc-js-xds
// beside grpc-js, and the driver says it can express xds.
func TestRunLab_GRPCJS_XDS_RoundRobinAndNACKs(t *testing.T) {
	requireLab(t)
	impl := Impl{GRPCJS, DefaultGRPCJS}
	cmd, err := Install(context.Background(), impl, InstallEnv{Cache: testCache, XDS: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := cmd.Args[len(cmd.Args)-1]
	if filepath.Base(dir) != "grpc-js-xds@"+DefaultGRPCJS {
		t.Errorf("xDS install in %s, want a cache entry of its own (grpc-js-xds@%s)", dir, DefaultGRPCJS)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@grpc", "grpc-js-xds", "package.json")); err != nil {
		t.Errorf("no @grpc/grpc-js-xds in the xDS install: %v", err)
	}
	runXDSRoundRobin(t, impl)
}

// grpcGoXDS builds the xDS driver for grpc-go version, checks the second
// install comes from the cache, and returns the implementation.
func grpcGoXDS(t *testing.T, version string) Impl {
	requireLab(t)
	if err := checkModuleExists(context.Background(), t.TempDir(), "google.golang.org/grpc@"+version); err != nil {
		t.Skipf("driver: grpc-go %s is not reachable: %v", version, err)
	}
	impl := Impl{GRPCGo, version}
	env := InstallEnv{Cache: testCache, XDS: true}
	start := time.Now()
	cold, err := Install(context.Background(), impl, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installing %s (xDS build) took %v", impl, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(cold.Path, "grpc-go-xds@"+version) {
		t.Errorf("xDS build at %s, want a cache entry of its own", cold.Path)
	}
	built := modTime(t, cold.Path)
	if cached, err := Install(context.Background(), impl, env); err != nil || cached.Path != cold.Path || !modTime(t, cached.Path).Equal(built) {
		t.Errorf("second install %s (%v), want the cached %s, not rebuilt", cached.Path, err, cold.Path)
	}
	return impl
}

// runXDSRoundRobin runs xdsRoundRobin through impl's xDS driver and checks
// the trace.
func runXDSRoundRobin(t *testing.T, impl Impl) {
	start := time.Now()
	tr, err := RunLab(context.Background(), xdsRoundRobin(), impl, Options{Seed: 1, Cache: testCache})
	t.Logf("RunLab (lab up, xDS server, driver, scenario, teardown): %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr))
	}
	if testing.Verbose() {
		t.Logf("trace:\n%s", dump(tr))
	}
	if !strings.Contains(tr.Header.Env["driver.can"], "xds") {
		t.Errorf("header env %v: the xDS build should say it can express xds", tr.Header.Env)
	}

	// Version 1 ACKed, type by type.
	for _, typ := range []string{"LDS", "RDS", "CDS", "EDS"} {
		acks := xdsRequests(tr.Events, trace.XDSACK, typ)
		if len(acks) == 0 || acks[0].Version != "1" || acks[0].Node != xdsNode {
			t.Errorf("%s: ACKs %v, want version 1 ACKed by node %q", typ, acks, xdsNode)
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
		t.Errorf("r1…r5 answered by %v, want both b1 and b2 (round_robin):\n%s", backends, dump(tr))
	}
	if served, ok := first(tr.Events, trace.KindRPCServed, ""); ok {
		t.Logf("channel created → first RPC served: %v (by %s on %s)", served.T, served.Backend, served.Addr)
		if served.T > time.Second {
			t.Errorf("first RPC served %v after the channel was created, want ≤ 1s", served.T)
		}
	} else {
		t.Errorf("no rpc-served event:\n%s", dump(tr))
	}

	// Version 2, the empty aggregate: NACKed, version 1 kept (r6 answered).
	nacks := xdsRequests(tr.Events, trace.XDSNACK, "CDS")
	acks := xdsRequests(tr.Events, trace.XDSACK, "CDS")
	if len(nacks) == 0 {
		t.Fatalf("version 2 (an aggregate cluster without clusters) was not NACKed:\n%s", dump(tr))
	}
	n := nacks[0]
	t.Logf("version 2 (empty aggregate): %s", n.String())
	if n.Version != "1" || n.Detail != "rejected 2" || n.Err == "" || n.Code == "" {
		t.Errorf("NACK %s: want version_info 1 (kept), rejecting version 2, with an error code and message", n.String())
	}
	if _, ok := results["r6"]; !ok {
		t.Errorf("r6 (after the NACK) has no result:\n%s", dump(tr))
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
		t.Errorf("no answer to version 3's CDS:\n%s", dump(tr))
	}
	if len(results) != 7 {
		t.Errorf("%d RPC results, want r1…r6 and one of r7, r8:\n%s", len(results), dump(tr))
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
	drv := fakeDriver(t, `printf '%s' "$GRPC_XDS_BOOTSTRAP_CONFIG" > `+dir+`/config
printf '%s' "${GRPC_XDS_BOOTSTRAP-unset}" > `+dir+`/file
read line
id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
echo '{"id":'$id',"ev":"ok","hello":{"protocol":1,"impl":"fake","version":"1","can":{"endpoints":true,"mixed_families":true,"service_config":true,"wait_for_ready":true,"xds":false},"observes":"every-change"}}'
cat >/dev/null`)
	var gotXDS []bool
	Register("fake-no-xds", InstallerFunc(func(_ context.Context, _ Impl, env InstallEnv) (Command, error) {
		gotXDS = append(gotXDS, env.XDS)
		return drv, nil
	}))
	_, err := RunLab(context.Background(), xdsRoundRobin(), Impl{Name: "fake-no-xds"}, Options{Cache: t.TempDir()})
	var na *NotApplicable
	if !errors.As(err, &na) || na.Reason != "fake 1 cannot express xds" {
		t.Fatalf("err = %v, want not-applicable: fake 1 cannot express xds", err)
	}
	if !slices.Equal(gotXDS, []bool{true}) {
		t.Errorf("installer asked for XDS %v, want [true]", gotXDS)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil || string(cfg) != string(xdsserver.Bootstrap(xdsNode)) {
		t.Errorf("driver's GRPC_XDS_BOOTSTRAP_CONFIG = %q (%v), want %s", cfg, err, xdsserver.Bootstrap(xdsNode))
	}
	if file, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || string(file) != "unset" {
		t.Errorf("driver's GRPC_XDS_BOOTSTRAP = %q (%v), want it unset (C-core reads an empty one as a file name)", file, err)
	}
}

// TestXDS_NeedsAndBuildTags checks the pieces that need no lab: an xds
// scenario needs xds (and no service config), and the Go driver's build
// tags and xDS floor.
func TestXDS_NeedsAndBuildTags(t *testing.T) {
	if got := needs(xdsRoundRobin()); !slices.Equal(got, []string{CanWaitForReady, CanXDS}) {
		t.Errorf("needs = %v, want [wait_for_ready xds]", got)
	}
	for _, c := range []struct {
		version string
		xds     bool
		want    string
	}{
		{"v1.85.0", false, ""},
		{"v1.85.0", true, "-tags conform_xds"},
		{"v1.55.0", true, "-tags conform_legacy,conform_xds"},
		{"v1.55.0", false, "-tags conform_legacy"},
	} {
		if got := strings.Join(buildTags(c.version, c.xds), " "); got != c.want {
			t.Errorf("buildTags(%s, %v) = %q, want %q", c.version, c.xds, got, c.want)
		}
	}
	if !hasXDS("v1.55.0") || !hasXDS("v1.85.0") || hasXDS("v1.54.1") {
		t.Errorf("hasXDS: want v1.55.0 and v1.85.0 only")
	}
}

// TestRunLab_GRPCJS_XDS_LogicalDNS runs a LOGICAL_DNS cluster through
// grpc-js-xds: the driver's system resolver is the lab's DNS, which serves
// the resolve step's address under the cluster's name, so the RPC reaches
// b1 and the lab DNS records the driver's query for that name.
func TestRunLab_GRPCJS_XDS_LogicalDNS(t *testing.T) {
	requireLab(t)
	s := scenario.New("xds-logical-dns").
		Backend("b1", scenario.V4Only).
		XDS("svc.conform").
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(0, scenario.XDSResources{
			Listeners:    []scenario.XDSListener{{Name: "svc.conform", RouteConfig: "rc1"}},
			RouteConfigs: []scenario.XDSRouteConfig{{Name: "rc1", Cluster: "dns1"}},
			Clusters:     []scenario.XDSCluster{{Name: "dns1", Type: scenario.ClusterLogicalDNS, DNSHost: "dns1.conform"}},
		}).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
	tr, err := RunLab(context.Background(), s, Impl{GRPCJS, DefaultGRPCJS}, Options{Seed: 1, Cache: testCache})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr))
	}
	r, ok := first(tr.Events, trace.KindRPCResult, "")
	if !ok || r.Code != "OK" || r.Backend != "b1" {
		t.Errorf("r1: %+v, want OK from b1 (dns1.conform resolved by the lab DNS):\n%s", r, dump(tr))
	}
	queried := slices.ContainsFunc(tr.Events, func(e trace.Event) bool {
		return e.Kind == trace.KindDNSQuery && strings.Contains(e.Detail, "dns1.conform")
	})
	if !queried {
		t.Errorf("no dns-query for dns1.conform: the driver did not ask the lab DNS:\n%s", dump(tr))
	}
}
