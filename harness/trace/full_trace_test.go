package trace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
)

// fullTraces are traces that, between them, set every field of Header,
// Event and the scenario model, and use every step kind, with values the
// Go reader accepts. Some fields exclude others (a client's lb_policy and
// service_config, the xds target and either), so there are several.
// TestSchema_WrittenTracesValidate checks them against the schema, and
// TestFullTraces_SetEveryField that they stay full as the model grows.
func fullTraces() []*Trace {
	var out []*Trace
	for i, s := range []*scenario.Scenario{fullXDSScenario(), fullManualScenario(), fullDNSScenario()} {
		if err := s.Validate(); err != nil {
			panic(err) // a fixture bug: Validate's message names the field
		}
		h := NewHeader(s, "grpc-go", ModeLab, ^uint64(0)-uint64(i)) // a seed above 2^53
		h.ImplVersion = "v1.85.0"
		h.Harness = "v0.0.0-test"
		h.Env = map[string]string{"go": "go1.26.8", "kernel": "6.1.0"}
		h.Origin, h.Shows = Origins[i%len(Origins)], Evidences
		out = append(out, &Trace{Header: h, Events: fullEvents()})
	}
	return out
}

// fullEvents is one event with every field set, then one event of each
// kind.
func fullEvents() []Event {
	v6, v4 := "[fd00:c0f::1]:50051", "198.18.0.1:50051"
	evs := []Event{{
		T: 0, Source: SourceControlPlane, Kind: KindXDSRequest,
		Addr: v6, Port: 65535, Peer: "198.18.0.200:40001", Backend: "b1", Subchannel: "sc1",
		Addrs: []string{v6, v4}, SessionAddrs: []string{v4, v6}, Policy: "priority/p0/pick_first",
		State: "TRANSIENT_FAILURE", Service: "conform.lab.Backend", RPC: "r1", Method: "/conform.Echo/Name", Code: "UNAVAILABLE",
		Timer: "connection attempt delay", TimerID: 1<<64 - 1, Duration: 250 * ms, Fault: "drop",
		Retransmit: true, WaitForReady: true, Endpoints: [][]string{{v6, v4}, {}},
		Node: "conform-client", TypeURL: "type.googleapis.com/envoy.config.cluster.v3.Cluster", XDS: XDSNACK,
		Version: "1", Nonce: "2", Names: []string{"eds1", ""}, Err: "rejected", Detail: "rejected 2",
	}}
	for i, k := range Kinds() {
		evs = append(evs, Event{T: time.Duration(i+1) * time.Microsecond, Source: SourceHarness, Kind: k})
	}
	return evs
}

// fullXDSScenario: the xds target, every action but config, every field of
// the xds step's resources and of a condition.
func fullXDSScenario() *scenario.Scenario {
	every := map[string]string{}
	for _, v := range scenario.EnvVars() {
		every[v] = "true"
	}
	every[scenario.EnvPriorityChildPolicyCache] = "false"
	return &scenario.Scenario{
		Name:        "full-xds",
		Description: "every field: quote \" tab \t <html> & ünïcode",
		Backends:    []scenario.Backend{{Name: "b1", Stack: scenario.Dual}, {Name: "b2", Stack: scenario.IPv4Only}, {Name: "b3", Stack: scenario.IPv6Only}},
		Client:      scenario.Client{Target: scenario.TargetXDS, Listener: "xdstp://conform/envoy.config.listener.v3.Listener/svc", Env: every},
		Steps: []scenario.Step{
			{At: 0, Action: scenario.ServeXDS(fullXDSResources())},
			{At: 10 * ms, Action: scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4").With("path", "p0/z1"), scenario.EP("b2/ipv4"))},
			{At: 20 * ms, Action: scenario.Fault("b1/ipv6", scenario.Stall)},
			{At: 30 * ms, Action: scenario.Clear("b1/ipv6")},
			{At: 35 * ms, Action: scenario.FailWith("b2/ipv4", "RESOURCE_EXHAUSTED")},
			{At: 40 * ms, Action: scenario.Health("b2/ipv4", scenario.NotServing).For("conform.lab.Backend")},
			{At: 50 * ms, Action: scenario.Stop("b3")},
			{At: 60 * ms, Action: scenario.Start("b3")},
			{At: 70 * ms, Action: scenario.RPC("r1", scenario.Deadline(1500*ms), scenario.WaitForReady(), scenario.Metadata("x-conform-session", "MTk4"))},
			{At: 80 * ms, Action: scenario.ResolveError("no such host")},
			{At: 90 * ms, Action: scenario.Wait(scenario.On("subchannel-state").WithState("READY").WithAddr("b3/ipv6"), 2*time.Second)},
			{After: ptr(scenario.On("xds-request").WithXDS("NACK", "CDS").Times(2)), Delay: 5 * ms, Action: scenario.ServeXDS(xds.Resources{Version: "v2"})},
			{After: ptr(scenario.On("xds-request").WithXDS("ACK", "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment")), Action: scenario.ServeXDS(xds.Resources{})},
			{After: ptr(scenario.On("timer-fire").WithTimer("failover").WithPolicy("priority")), Action: scenario.Fault("b2/ipv4", scenario.Drop)},
			{After: ptr(scenario.On("preface").WithBackend("b3")), Action: scenario.RPC("r2")},
			{After: ptr(scenario.On("rpc-result").WithRPC("r1").WithCode("DEADLINE_EXCEEDED")), Action: scenario.Finish()},
		},
		End: time.Minute + 500*time.Microsecond,
	}
}

// fullXDSResources sets every field of an xds step, each alternative of
// upstream_config and every invalid additional address form.
func fullXDSResources() xds.Resources {
	return xds.Resources{
		Version:      "1",
		Listeners:    []xds.Listener{{Name: "xdstp://conform/envoy.config.listener.v3.Listener/svc", RouteConfig: "rc"}},
		RouteConfigs: []xds.RouteConfig{{Name: "rc", Cluster: "agg", HashHeader: "x-key"}},
		Clusters: []xds.Cluster{
			{Name: "agg", Type: xds.ClusterAggregate, Clusters: []string{"eds1", "dns", "missing"}, LBPolicy: xds.RingHash, MinRingSize: 8, MaxRingSize: 1<<63 - 1},
			{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.PickFirst, Shuffle: true,
				OutlierDetection: &xds.OutlierDetection{
					Interval: 2 * time.Second, BaseEjectionTime: time.Second, MaxEjectionTime: 5 * time.Minute, MaxEjectionPercent: 100,
					SuccessRate:       &xds.SuccessRate{StdevFactor: 1900, Enforcement: 100, MinimumHosts: 5, RequestVolume: 100},
					FailurePercentage: &xds.FailurePercentage{Threshold: 85, Enforcement: 1, MinimumHosts: 2, RequestVolume: 1<<32 - 1},
				},
				UpstreamConfig: &xds.UpstreamConfig{HTTPProtocolOptions: &xds.HTTPProtocolOptions{
					Common: true, IdleTimeout: &xds.Duration{Seconds: -315576000001, Nanos: -1 << 31},
				}}},
			{Name: "dns", Type: xds.ClusterLogicalDNS, DNSHost: "svc.conform", DNSPort: 65535, LBPolicy: xds.RoundRobin,
				UpstreamConfig: &xds.UpstreamConfig{TypeURL: "type.googleapis.com/google.protobuf.Empty"}},
		},
		Endpoints: []xds.LoadAssignment{{Cluster: "eds1", Priorities: []xds.Priority{
			{Localities: []xds.Locality{{Name: "z1", Weight: 1<<32 - 1, Endpoints: []xds.Endpoint{
				{Addr: "b1/ipv6", AdditionalAddrs: []scenario.Addr{"b1/ipv4"}, InvalidAdditionalAddrs: xds.InvalidAddrForms(),
					Health: xds.HealthDegraded, Weight: 3},
				{Addr: "b2/ipv4"},
			}}, {}}},
			{}, // an empty priority keeps its place
		}}},
	}
}

// fullManualScenario: the manual target with lb_policy and lb_config, and
// config steps of both forms.
func fullManualScenario() *scenario.Scenario {
	return scenario.New("full-manual").
		Backend("b1", scenario.Dual).
		Target(scenario.TargetManual).
		LB("conform_pick_first", `{"shuffleAddressList":true}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(time.Second, scenario.Config("round_robin", `{}`)).
		AfterDelay(scenario.On("config-update"), time.Millisecond, scenario.ConfigService(`{"loadBalancingConfig":[{"pick_first":{}}]}`)).
		End(2 * time.Second).
		MustBuild()
}

// fullDNSScenario: the dns target with a whole service config and an idle
// timeout.
func fullDNSScenario() *scenario.Scenario {
	return scenario.New("full-dns").
		Backend("b1", scenario.IPv4Only).
		Target(scenario.TargetDNS).
		IdleTimeout(time.Second).
		ServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		End(time.Second).
		MustBuild()
}

func ptr[T any](v T) *T { return &v }

// TestFullTraces_SetEveryField verifies fullTraces set every exported field
// of Header, Event and the scenario model somewhere, and use every step
// kind, so that a field added to the model is validated against the schema
// before any golden trace uses it. A failure names the field to set in
// full_trace_test.go (and to describe in the schema).
func TestFullTraces_SetEveryField(t *testing.T) {
	set := map[string]bool{} // Type.Field → non-zero somewhere
	kinds := map[string]bool{}
	for _, tr := range fullTraces() {
		markFields(reflect.ValueOf(tr).Elem(), set)
		for _, st := range tr.Header.Scenario.Steps {
			kinds[string(st.Kind())] = true
		}
	}
	for _, f := range slices.Sorted(maps.Keys(set)) {
		if !set[f] {
			t.Errorf("no full trace sets %s", f)
		}
	}
	for _, k := range stepKinds(t) {
		if !kinds[k] {
			t.Errorf("no full trace has a %q step", k)
		}
	}
}

// markFields records, for every exported field of every struct reachable
// from v (through pointers, interfaces, slices and maps), whether it is
// non-zero in at least one value met.
func markFields(v reflect.Value, set map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			markFields(v.Elem(), set)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			markFields(v.Index(i), set)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			markFields(it.Value(), set)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			key := t.String() + "." + f.Name
			set[key] = set[key] || !v.Field(i).IsZero()
			markFields(v.Field(i), set)
		}
	}
}

// stepKinds lists the values of the StepKind constants declared in
// harness/scenario, so that a step kind added there cannot be forgotten.
func stepKinds(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../scenario/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "StepKind" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						continue
					}
					k, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, k)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no StepKind constants found in harness/scenario")
	}
	return out
}
