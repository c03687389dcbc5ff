package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func heDroppedIPv6() *Builder {
	return New("he-dropped-ipv6").
		Backend("b1", Dual).
		LB("conform_pick_first", `{}`).
		Env(EnvPickFirstLBConfig, "true").
		At(0, Fault("b1/ipv6", Drop)).
		At(0, Resolve(EP("b1/ipv6", "b1/ipv4").With("zone", "a"))).
		At(100*time.Millisecond, RPC("r1", Deadline(5*time.Second), WaitForReady(), Metadata("k", "v"))).
		AfterDelay(On("subchannel-state").WithState("TRANSIENT_FAILURE").WithAddr("b1/ipv6").Times(2),
			10*time.Millisecond, Clear("b1/ipv6")).
		At(time.Second, Stop("b1")).
		At(2*time.Second, Start("b1")).
		At(2*time.Second, Wait(On("channel-state").WithState("READY"), 5*time.Second)).
		At(3*time.Second, Health("b1/ipv4", NotServing)).
		At(4*time.Second, ResolveError("name not found")).
		At(5*time.Second, Config("conform_pick_first", `{"shuffleAddressList":true}`)).
		At(6*time.Second, ConfigService(`{"loadBalancingConfig":[{"round_robin":{}}]}`)).
		After(On("rpc-result").WithRPC("r1").WithCode("OK"), Finish()).
		End(30 * time.Second)
}

// TestBuilder_ProducesTypedTimeline verifies the builder's output is the
// sorted, typed timeline runners switch on.
func TestBuilder_ProducesTypedTimeline(t *testing.T) {
	s := heDroppedIPv6().MustBuild()
	var kinds []StepKind
	for _, st := range s.Steps {
		kinds = append(kinds, st.Kind())
	}
	want := []StepKind{StepFault, StepResolve, StepRPC, StepClear, StepBackendDown, StepBackendUp, StepWait,
		StepHealth, StepResolverErr, StepConfig, StepConfig, StepFinish}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("step kinds (-want +got):\n%s", diff)
	}
	if got := s.Steps[3].After.N(); got != 2 {
		t.Errorf("count of the clear step's condition = %d, want 2", got)
	}
	if got := s.Steps[11].After.N(); got != 1 {
		t.Errorf("default count = %d, want 1", got)
	}
}

// TestBuilder_EnvNotShared verifies a built scenario's environment is its
// own: setting a variable on the builder afterwards does not change it.
func TestBuilder_EnvNotShared(t *testing.T) {
	b := New("e").Env(EnvAggregateClusterBackwardCompat, "true").End(time.Second)
	s := b.MustBuild()
	b.Env(EnvPickFirstLBConfig, "false")
	if want := map[string]string{EnvAggregateClusterBackwardCompat: "true"}; !cmp.Equal(s.Client.Env, want) {
		t.Errorf("Client.Env = %v, want %v", s.Client.Env, want)
	}
}

// TestEnvList_SortedNameValue verifies the process form of an environment.
func TestEnvList_SortedNameValue(t *testing.T) {
	got := EnvList(map[string]string{EnvXDSDualstackEndpoints: "true", EnvAggregateClusterBackwardCompat: "false"})
	want := []string{EnvXDSDualstackEndpoints + "=true", EnvAggregateClusterBackwardCompat + "=false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EnvList (-want +got):\n%s", diff)
	}
}

// TestBuilder_RejectsInvalidScenario verifies Build runs Validate.
func TestBuilder_RejectsInvalidScenario(t *testing.T) {
	_, err := New("x").Backend("b1", IPv4Only).At(0, Fault("b1/ipv6", Drop)).End(time.Second).Build()
	var e *Error
	if !errors.As(err, &e) || e.Field != "steps[0].fault.addr" {
		t.Fatalf("Build() error = %v, want an *Error on steps[0].fault.addr", err)
	}
}

// TestRoundTrip_ModelYAMLModel verifies Decode(Encode(s)) gives back s.
func TestRoundTrip_ModelYAMLModel(t *testing.T) {
	s := heDroppedIPv6().MustBuild()
	data, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode("he.yaml", data)
	if err != nil {
		t.Fatalf("Decode(Encode(s)): %v\n%s", err, data)
	}
	if diff := cmp.Diff(s, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s\nYAML:\n%s", diff, data)
	}
}

// TestRoundTrip_ModelJSONModel verifies the JSON form (a trace header's)
// reads back to the same scenario.
func TestRoundTrip_ModelJSONModel(t *testing.T) {
	s := heDroppedIPv6().MustBuild()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got Scenario
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("Unmarshal: %v\n%s", err, data)
	}
	if diff := cmp.Diff(s, &got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
}

// TestUnmarshalJSON_RejectsUnknownField verifies the JSON form is as strict
// as the YAML form.
func TestUnmarshalJSON_RejectsUnknownField(t *testing.T) {
	var s Scenario
	err := json.Unmarshal([]byte(`{"name":"x","end":"1s","colour":"red"}`), &s)
	if err == nil || !strings.Contains(err.Error(), "colour: unknown field") {
		t.Fatalf("Unmarshal error = %v, want colour: unknown field", err)
	}
}

// TestDecode_OKFilesRoundTrip verifies every *-ok.yaml example decodes and
// survives encode and decode unchanged.
func TestDecode_OKFilesRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*-ok.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/*-ok.yaml")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := DecodeFile(f)
			if err != nil {
				t.Fatal(err)
			}
			data, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Decode(f, data)
			if err != nil {
				t.Fatalf("re-decode: %v\n%s", err, data)
			}
			if diff := cmp.Diff(s, again); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecode_BadFilesNameFileLineAndField verifies each malformed example is
// refused with an *Error at the right file, line and field.
func TestDecode_BadFilesNameFileLineAndField(t *testing.T) {
	cases := map[string]struct {
		line  int
		field string
		msg   string
	}{
		"after-bad-undefined-rpc.yaml":         {7, "steps[1].after.rpc", `rpc "r2" is not defined`},
		"after-bad-undefined-backend.yaml":     {7, "steps[1].after.backend", `backend "b2" is not defined`},
		"after-bad-unknown-kind.yaml":          {5, "steps[0].after.kind", "unknown event kind"},
		"client-bad-lb-config.yaml":            {6, "client.lb_config", "not a JSON object"},
		"client-bad-health-check-config.yaml":  {6, "client.service_config", `unknown field "servicename"`},
		"client-bad-idle-timeout.yaml":         {6, "client.idle_timeout", "not a duration"},
		"dns-bad-second-resolve.yaml":          {8, "steps[1].resolve", "takes one resolve step"},
		"health-bad-service.yaml":              {8, "steps[0].health.service", "control character"},
		"config-bad-lb-config.yaml":            {10, "steps[1].config.lb_config", "not a JSON object"},
		"config-bad-no-policy.yaml":            {9, "steps[1].config", "needs lb_policy or service_config"},
		"end-bad-step-after-end.yaml":          {5, "steps[0].at", "after the end"},
		"env-bad-unknown-variable.yaml":        {7, "client.env.GRPC_TRACE", `unknown variable "GRPC_TRACE"`},
		"fault-bad-undefined-backend.yaml":     {13, "steps[2].fault.addr", `backend "b3" is not defined`},
		"fault-bad-code-not-fail-rpcs.yaml":    {8, "steps[1].fault.code", "only fail_rpcs answers with a code, not reset"},
		"resolve-bad-missing-family.yaml":      {8, "steps[0].resolve.endpoints[0].addrs[1]", "has no ipv6 address"},
		"rpc-bad-duplicate-id.yaml":            {8, "steps[1].rpc.id", "defined more than once"},
		"rpc-bad-duration.yaml":                {6, "steps[0].rpc.deadline", "not a duration"},
		"step-bad-two-actions.yaml":            {7, "steps[0]", "more than one action"},
		"timeline-bad-time-backwards.yaml":     {7, "steps[1].at", "times go backwards"},
		"unknown-field-bad-unknown-field.yaml": {6, "steps[0].fault.jitter", "unknown field"},
		"xds-bad-unknown-cluster-type.yaml":    {9, "steps[0].xds.clusters[0].type", `unknown cluster type "STATIC"`},
		"xds-bad-endpoint-family.yaml":         {14, "steps[0].xds.endpoints[0].priorities[0].localities[0].endpoints[0].additional_addresses[0]", "has no ipv6 address"},
		"xds-bad-step-without-target.yaml":     {7, "steps[0].xds", "needs client.target xds"},
		"xds-bad-cond-type.yaml":               {8, "steps[0].wait.event.type", "unknown resource type"},
		// yaml.v3 reports a parser error on the line before the one where
		// the unclosed flow mapping starts; we pass its number through.
		"yaml-bad-syntax.yaml": {2, "", "did not find expected"},
	}
	files, _ := filepath.Glob("testdata/*-bad-*.yaml")
	if len(files) != len(cases) {
		t.Errorf("%d bad files in testdata, %d cases in the table", len(files), len(cases))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := cases[filepath.Base(f)]
			if !ok {
				t.Fatal("no case for this file")
			}
			_, err := DecodeFile(f)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("DecodeFile error = %v, want *Error", err)
			}
			if e.File != f || e.Line != want.line || e.Field != want.field || !strings.Contains(e.Msg, want.msg) {
				t.Fatalf("got %q (file %q line %d field %q)\nwant line %d field %q msg containing %q",
					err, e.File, e.Line, e.Field, want.line, want.field, want.msg)
			}
			prefix := fmt.Sprintf("%s:%d: ", f, want.line)
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
		})
	}
}

// TestValidate_Problems verifies Validate's checks on scenarios built in Go.
func TestValidate_Problems(t *testing.T) {
	base := func() *Builder { return New("v").Backend("b1", Dual) }
	cases := []struct {
		name  string
		b     *Builder
		field string
	}{
		{"empty name", New("").Backend("b1", Dual).End(time.Second), "name"},
		{"bad name", New("a b").End(time.Second), "name"},
		{"duplicate backend", base().Backend("b1", IPv4Only).End(time.Second), "backends[1].name"},
		{"unknown stack", base().Backend("b2", "ipv5").End(time.Second), "backends[1].stack"},
		{"no end", base(), "end"},
		{"unknown target", base().Target("xdss").End(time.Second), "client.target"},
		{"negative idle timeout", base().IdleTimeout(-time.Second).End(time.Second), "client.idle_timeout"},
		{"dns without records", base().Target(TargetDNS).End(time.Second), "steps"},
		{"dns with two resolve steps", base().Target(TargetDNS).At(0, Resolve(EP("b1/ipv4"))).At(time.Millisecond, Resolve(EP("b1/ipv6"))).End(time.Second), "steps[1].resolve"},
		{"dns with attributes", base().Target(TargetDNS).At(0, Resolve(EP("b1/ipv4").With("path", "p0"))).End(time.Second), "steps[0].resolve.endpoints[0].attrs"},
		{"config without policy", base().LB("", `{}`).End(time.Second), "client.lb_config"},
		{"policy and service config", base().LB("p", "").ServiceConfig(`{}`).End(time.Second), "client.service_config"},
		{"service config not an object", base().ServiceConfig(`[1]`).End(time.Second), "client.service_config"},
		{"lb config null", base().LB("p", `null`).End(time.Second), "client.lb_config"},
		{"malformed addr", base().At(0, Clear("b1")).End(time.Second), "steps[0].clear.addr"},
		{"unknown fault", base().At(0, Fault("b1/ipv4", "melt")).End(time.Second), "steps[0].fault.type"},
		{"fail_rpcs with OK", base().At(0, FailWith("b1/ipv4", "OK")).End(time.Second), "steps[0].fault.code"},
		{"fail_rpcs unknown code", base().At(0, FailWith("b1/ipv4", "Unavailable")).End(time.Second), "steps[0].fault.code"},
		{"code on another fault", base().At(0, SetFault{Addr: "b1/ipv4", Fault: Stall, Code: "INTERNAL"}).End(time.Second), "steps[0].fault.code"},
		{"fail_rpcs on a missing family", New("v").Backend("b1", IPv4Only).At(0, FailWith("b1/ipv6", "")).End(time.Second), "steps[0].fault.addr"},
		{"undefined backend down", base().At(0, Stop("b9")).End(time.Second), "steps[0].backend_down.backend"},
		{"empty endpoint", base().At(0, Resolve(EP())).End(time.Second), "steps[0].resolve.endpoints[0].addrs"},
		{"negative deadline", base().At(0, RPC("r", Deadline(-1))).End(time.Second), "steps[0].rpc.deadline"},
		{"bad metadata key", base().At(0, RPC("r", Metadata("X-Up", "v"))).End(time.Second), "steps[0].rpc.metadata"},
		{"binary metadata key", base().At(0, RPC("r", Metadata("k-bin", "v"))).End(time.Second), "steps[0].rpc.metadata"},
		{"wait without timeout", base().At(0, Wait(On("pick"), 0)).End(time.Second), "steps[0].wait.timeout"},
		{"unknown state", base().After(On("channel-state").WithState("SLEEPY"), Finish()).End(time.Second), "steps[0].after.state"},
		{"unknown code", base().After(On("rpc-result").WithCode("Unavailable"), Finish()).End(time.Second), "steps[0].after.code"},
		{"negative time", base().At(-1, Finish()).End(time.Second), "steps[0].at"},
		{"negative delay", base().AfterDelay(On("pick"), -1, Finish()).End(time.Second), "steps[0].delay"},
		{"no action", base().At(0, nil).End(time.Second), "steps[0]"},
		{"unknown health status", base().At(0, Health("b1/ipv4", "MAYBE")).End(time.Second), "steps[0].health.status"},
		{"health service not UTF-8", base().At(0, Health("b1/ipv4", Serving).For("a\xffb")).End(time.Second), "steps[0].health.service"},
		{"healthCheckConfig not an object", base().ServiceConfig(`{"healthCheckConfig":"svc"}`).End(time.Second), "client.service_config"},
		{"healthCheckConfig serviceName not a string", base().ServiceConfig(`{"healthCheckConfig":{"serviceName":1}}`).End(time.Second), "client.service_config"},
		{"config step healthCheckConfig", base().At(0, ConfigService(`{"healthCheckConfig":{"serviceName":"a\u0000"}}`)).End(time.Second), "steps[0].config.service_config"},
		{"empty resolver error", base().At(0, ResolveError("")).End(time.Second), "steps[0].resolver_error.err"},
		{"empty config", base().At(0, SetConfig{}).End(time.Second), "steps[0].config"},
		{"config without policy", base().At(0, Config("", `{}`)).End(time.Second), "steps[0].config.lb_config"},
		{"config with policy and service config", base().At(0, SetConfig{LBPolicy: "p", ServiceConfig: `{}`}).End(time.Second), "steps[0].config.service_config"},
		{"config not JSON", base().At(0, Config("p", `{"a":`)).End(time.Second), "steps[0].config.lb_config"},
		{"config service config not an object", base().At(0, ConfigService(`"x"`)).End(time.Second), "steps[0].config.service_config"},
		{"xds kind on another event", base().After(On("pick").WithXDS("ACK", ""), Finish()).End(time.Second), "steps[0].after.xds"},
		{"resource type on another event", base().After(On("pick").WithXDS("", "CDS"), Finish()).End(time.Second), "steps[0].after.type"},
		{"unknown env variable", base().Env("GRPC_VERBOSITY", "debug").End(time.Second), "client.env.GRPC_VERBOSITY"},
		{"env value not a switch", base().Env(EnvAggregateClusterBackwardCompat, "yes").End(time.Second), "client.env." + EnvAggregateClusterBackwardCompat},
		{"unknown xds kind", base().After(On("xds-request").WithXDS("nack", ""), Finish()).End(time.Second), "steps[0].after.xds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.b.Build()
			var e *Error
			if !errors.As(err, &e) || e.Field != c.field {
				t.Fatalf("Build() error = %v, want an *Error on %s", err, c.field)
			}
		})
	}
}

// TestConcreteEndpoints_DerivesFromBackendIndex verifies symbolic addresses
// become concrete ones through the runner's AddrFunc and the backend index.
func TestConcreteEndpoints_DerivesFromBackendIndex(t *testing.T) {
	s := New("c").Backend("b1", Dual).Backend("b2", IPv6Only).End(time.Second).MustBuild()
	addrOf := func(b string, i int, fam Family) string {
		if fam == IPv6 {
			return fmt.Sprintf("[fd00::%d]:50051", i+1)
		}
		return fmt.Sprintf("198.18.0.%d:50051", i+1)
	}
	got, err := s.ConcreteEndpoints([]Endpoint{EP("b2/ipv6", "b1/ipv4"), EP("b1/ipv6")}, addrOf)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"[fd00::2]:50051", "198.18.0.1:50051"}, {"[fd00::1]:50051"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if _, err := s.ConcreteEndpoints([]Endpoint{EP("b2/ipv4")}, addrOf); err == nil {
		t.Error("b2/ipv4 on an IPv6-only backend: no error")
	}
	if got := s.Symbolic(addrOf)["[fd00::2]:50051"]; got != "b2/ipv6" {
		t.Errorf("Symbolic([fd00::2]:50051) = %q, want b2/ipv6", got)
	}
	if s.BackendIndex("b2") != 1 || s.BackendIndex("nope") != -1 {
		t.Errorf("BackendIndex: b2=%d nope=%d", s.BackendIndex("b2"), s.BackendIndex("nope"))
	}
}

// TestDecode_RejectsAliasesAndSecondDocument verifies YAML features outside
// the format are refused with a line.
func TestDecode_RejectsAliasesAndSecondDocument(t *testing.T) {
	for name, src := range map[string]string{
		"alias":  "name: &n x\ndescription: *n\nend: 1s\n",
		"two":    "name: x\nend: 1s\n---\nname: y\n",
		"empty":  "",
		"nokeys": "- 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode("f.yaml", []byte(src))
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" || e.Line < 1 {
				t.Fatalf("Decode error = %v, want *Error with file and line", err)
			}
		})
	}
}

// TestEffectiveServiceConfig_FromClient verifies how a client's LB policy
// becomes a service config in standard names.
func TestEffectiveServiceConfig_FromClient(t *testing.T) {
	if got := (Client{LBPolicy: "round_robin"}).EffectiveServiceConfig(); got != `{"loadBalancingConfig":[{"round_robin":{}}]}` {
		t.Errorf("got %s", got)
	}
	if got := (Client{}).EffectiveServiceConfig(); got != "" {
		t.Errorf("no policy: got %q, want the implementation's default", got)
	}
	sc := `{"loadBalancingConfig":[{"pick_first":{}}],"methodConfig":[]}`
	if got := (Client{ServiceConfig: sc}).EffectiveServiceConfig(); got != sc {
		t.Errorf("service config: got %s, want it as it is", got)
	}
}

// TestHealthCheckService_ReadsServiceName verifies A17's healthCheckConfig
// is read as the client's health checking: on with a serviceName ("" too),
// off without one.
func TestHealthCheckService_ReadsServiceName(t *testing.T) {
	cases := []struct {
		sc      string
		service string
		on      bool
	}{
		{``, "", false},
		{`{"loadBalancingConfig":[{"round_robin":{}}]}`, "", false},
		{`{"healthCheckConfig":{}}`, "", false},
		{`{"healthCheckConfig":null}`, "", false},
		{`{"healthCheckConfig":{"serviceName":null}}`, "", false},
		{`{"healthCheckConfig":{"serviceName":""}}`, "", true},
		{`{"healthCheckConfig":{"serviceName":"conform.lab.Backend"}}`, "conform.lab.Backend", true},
	}
	for _, c := range cases {
		service, on, err := HealthCheckService(c.sc)
		if err != nil || service != c.service || on != c.on {
			t.Errorf("HealthCheckService(%s) = %q, %v, %v; want %q, %v, nil", c.sc, service, on, err, c.service, c.on)
		}
	}
	if _, _, err := HealthCheckService(`{"healthCheckConfig":{"ServiceName":"x"}}`); err == nil {
		t.Error("a misspelt serviceName: no error")
	}
}

// TestSetFault_FailCode verifies the code a fault answers RPCs with:
// fail_rpcs's own, UNAVAILABLE by default, and none for the network faults.
func TestSetFault_FailCode(t *testing.T) {
	for _, c := range []struct {
		f    SetFault
		want string
	}{
		{Fault("b1/ipv4", FailRPCs), DefaultFailCode},
		{FailWith("b1/ipv4", "INTERNAL"), "INTERNAL"},
		{Fault("b1/ipv4", Reset), ""},
	} {
		if got := c.f.FailCode(); got != c.want {
			t.Errorf("%+v.FailCode() = %q, want %q", c.f, got, c.want)
		}
	}
}
