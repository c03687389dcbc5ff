package xds_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
)

// The xDS sub-language is read, written and checked through the scenario
// that holds it (field paths and lines are the scenario's), so these tests
// go through harness/scenario.

func valid() xds.Resources {
	return xds.Resources{
		Version:      "7",
		Listeners:    []xds.Listener{{Name: "svc", RouteConfig: "rc"}},
		RouteConfigs: []xds.RouteConfig{{Name: "rc", Cluster: "agg", HashHeader: "x-key"}},
		Clusters: []xds.Cluster{
			{Name: "agg", Type: xds.ClusterAggregate, Clusters: []string{"c1", "dns"}},
			{Name: "c1", Type: xds.ClusterEDS, LBPolicy: xds.RingHash, MinRingSize: 8, MaxRingSize: 1024,
				OutlierDetection: &xds.OutlierDetection{Interval: time.Second, MaxEjectionTime: time.Minute, MaxEjectionPercent: 100,
					SuccessRate: &xds.SuccessRate{StdevFactor: 1900, Enforcement: 100, MinimumHosts: 2, RequestVolume: 10}},
				UpstreamConfig: &xds.UpstreamConfig{HTTPProtocolOptions: &xds.HTTPProtocolOptions{Common: true,
					IdleTimeout: &xds.Duration{Seconds: 315576000001, Nanos: -1}}}},
			{Name: "dns", Type: xds.ClusterLogicalDNS, DNSHost: "svc.conform", DNSPort: 8080, LBPolicy: xds.PickFirst, Shuffle: true,
				UpstreamConfig: &xds.UpstreamConfig{HTTPProtocolOptions: &xds.HTTPProtocolOptions{}}},
			{Name: "other", Type: xds.ClusterEDS, UpstreamConfig: &xds.UpstreamConfig{TypeURL: "type.googleapis.com/google.protobuf.Empty"}},
		},
		Endpoints: []xds.LoadAssignment{{Cluster: "c1", Priorities: []xds.Priority{
			{Localities: []xds.Locality{{Name: "z1", Weight: 2, Endpoints: []xds.Endpoint{
				{Addr: "b1/ipv6", AdditionalAddrs: []scenario.Addr{"b1/ipv4"}, Health: xds.HealthDraining, Weight: 5},
				{Addr: "b2/ipv4", InvalidAdditionalAddrs: xds.InvalidAddrForms()},
			}}}},
			{}, // an empty priority keeps its place
			{Localities: []xds.Locality{{Name: "z2"}}},
		}}},
	}
}

// withResources is a scenario whose xds steps serve x, then nothing once
// the client has sent its first request.
func withResources(x xds.Resources) *scenario.Builder {
	return scenario.New("xds").Backend("b1", scenario.Dual).Backend("b2", scenario.IPv4Only).XDS("svc").
		At(0, scenario.ServeXDS(x)).
		After(scenario.On("xds-request"), scenario.ServeXDS(xds.Resources{})).
		End(time.Second)
}

// TestRoundTrip_EveryField verifies an xds step with every field set
// survives YAML and JSON (a trace header's form) unchanged.
func TestRoundTrip_EveryField(t *testing.T) {
	s := withResources(valid()).MustBuild()
	data, err := scenario.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := scenario.Decode("x.yaml", data)
	if err != nil {
		t.Fatalf("Decode(Encode(s)): %v\n%s", err, data)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Fatalf("YAML round trip (-want +got):\n%s\nYAML:\n%s", diff, data)
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back scenario.Scenario
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("Unmarshal: %v\n%s", err, js)
	}
	if diff := cmp.Diff(s, &back); diff != "" {
		t.Fatalf("JSON round trip (-want +got):\n%s", diff)
	}
}

// TestRoundTrip_JSONUint64 verifies that a number beyond int64, which only
// the uint64 ring sizes can hold, reads back from the JSON form as the
// integer it is (not as a float the strict reader refuses).
func TestRoundTrip_JSONUint64(t *testing.T) {
	res := valid()
	res.Clusters[1].MinRingSize, res.Clusters[1].MaxRingSize = 8, math.MaxUint64
	s := withResources(valid()).At(0, scenario.ServeXDS(res)).MustBuild()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got scenario.Scenario
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if diff := cmp.Diff(s, &got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
}

// TestValidate_NamesTheField verifies the resources' checks name the field.
func TestValidate_NamesTheField(t *testing.T) {
	with := func(f func(*xds.Resources)) *scenario.Builder {
		x := valid()
		f(&x)
		return scenario.New("v").Backend("b1", scenario.Dual).Backend("b2", scenario.IPv4Only).XDS("svc").
			At(0, scenario.ServeXDS(x)).End(time.Second)
	}
	c1 := func(f func(*xds.Cluster)) *scenario.Builder {
		return with(func(x *xds.Resources) { f(&x.Clusters[1]) })
	}
	ep := func(f func(*xds.Endpoint)) *scenario.Builder {
		return with(func(x *xds.Resources) { f(&x.Endpoints[0].Priorities[0].Localities[0].Endpoints[0]) })
	}
	const cp = "steps[0].xds.clusters[1]"
	const epp = "steps[0].xds.endpoints[0].priorities[0].localities[0].endpoints[0]"
	cases := []struct {
		name  string
		b     *scenario.Builder
		field string
	}{
		{"version with space", with(func(x *xds.Resources) { x.Version = "a b" }), "steps[0].xds.version"},
		{"duplicate listener", with(func(x *xds.Resources) { x.Listeners = append(x.Listeners, x.Listeners[0]) }), "steps[0].xds.listeners[1].name"},
		{"listener without route", with(func(x *xds.Resources) { x.Listeners[0].RouteConfig = "" }), "steps[0].xds.listeners[0].route_config"},
		{"route without cluster", with(func(x *xds.Resources) { x.RouteConfigs[0].Cluster = "" }), "steps[0].xds.route_configs[0].cluster"},
		{"binary hash header", with(func(x *xds.Resources) { x.RouteConfigs[0].HashHeader = "x-key-bin" }), "steps[0].xds.route_configs[0].hash_header"},
		{"upper-case hash header", with(func(x *xds.Resources) { x.RouteConfigs[0].HashHeader = "X-Key" }), "steps[0].xds.route_configs[0].hash_header"},
		{"duplicate cluster", c1(func(c *xds.Cluster) { c.Name = "agg" }), cp + ".name"},
		{"unknown type", c1(func(c *xds.Cluster) { c.Type = "STATIC" }), cp + ".type"},
		{"clusters on EDS", c1(func(c *xds.Cluster) { c.Clusters = []string{"x"} }), cp + ".clusters"},
		{"dns host on EDS", c1(func(c *xds.Cluster) { c.DNSHost = "h" }), cp + ".dns_host"},
		{"LOGICAL_DNS without host", with(func(x *xds.Resources) { x.Clusters[2].DNSHost = "" }), "steps[0].xds.clusters[2].dns_host"},
		{"unknown policy", c1(func(c *xds.Cluster) { c.LBPolicy = "least_request" }), cp + ".lb_policy"},
		{"shuffle on ring_hash", c1(func(c *xds.Cluster) { c.Shuffle = true }), cp + ".shuffle"},
		{"ring size on pick_first", with(func(x *xds.Resources) { x.Clusters[2].MinRingSize = 1 }), "steps[0].xds.clusters[2].min_ring_size"},
		{"ring sizes inverted", c1(func(c *xds.Cluster) { c.MinRingSize = 2048 }), cp + ".max_ring_size"},
		{"ejection percent", c1(func(c *xds.Cluster) { c.OutlierDetection.MaxEjectionPercent = 101 }), cp + ".outlier_detection.max_ejection_percent"},
		{"negative interval", c1(func(c *xds.Cluster) { c.OutlierDetection.Interval = -1 }), cp + ".outlier_detection.interval"},
		{"success rate off", c1(func(c *xds.Cluster) { c.OutlierDetection.SuccessRate.Enforcement = 0 }), cp + ".outlier_detection.success_rate.enforcement"},
		{"both upstream configs", c1(func(c *xds.Cluster) { c.UpstreamConfig.TypeURL = "a/b" }), cp + ".upstream_config"},
		{"no upstream config", c1(func(c *xds.Cluster) { c.UpstreamConfig = &xds.UpstreamConfig{} }), cp + ".upstream_config"},
		{"bad type URL", with(func(x *xds.Resources) { x.Clusters[3].UpstreamConfig.TypeURL = "Empty" }), "steps[0].xds.clusters[3].upstream_config.type_url"},
		{"duplicate assignment", with(func(x *xds.Resources) { x.Endpoints = append(x.Endpoints, x.Endpoints[0]) }), "steps[0].xds.endpoints[1].cluster"},
		{"duplicate locality", with(func(x *xds.Resources) {
			x.Endpoints[0].Priorities[0].Localities = append(x.Endpoints[0].Priorities[0].Localities, xds.Locality{Name: "z1"})
		}), "steps[0].xds.endpoints[0].priorities[0].localities[1].name"},
		{"undefined backend", ep(func(e *xds.Endpoint) { e.Addr = "b9/ipv4" }), epp + ".addr"},
		{"additional address family", ep(func(e *xds.Endpoint) { e.AdditionalAddrs = []scenario.Addr{"b2/ipv6"} }), epp + ".additional_addresses[0]"},
		{"unknown health", ep(func(e *xds.Endpoint) { e.Health = "SERVING" }), epp + ".health"},
		{"unknown invalid address form", ep(func(e *xds.Endpoint) { e.InvalidAdditionalAddrs = []string{"unset", "pipe"} }),
			epp + ".invalid_additional_addresses[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.b.Build()
			var e *scenario.Error
			if !errors.As(err, &e) || e.Field != c.field {
				t.Fatalf("Build() error = %v, want an *Error on %s", err, c.field)
			}
		})
	}
	// Out-of-range idle timeouts, an unknown upstream type and dangling
	// references are valid scenarios (NACK and does-not-exist cases).
	if _, err := with(func(x *xds.Resources) { x.RouteConfigs[0].Cluster = "nowhere" }).Build(); err != nil {
		t.Errorf("dangling reference refused: %v", err)
	}
}

// TestDecode_InvalidAdditionalAddresses verifies the YAML form of A61's
// NACK cases: a list of form names, read in order; an unknown form is
// refused on its line, naming its field.
func TestDecode_InvalidAdditionalAddresses(t *testing.T) {
	doc := func(forms string) []byte {
		return []byte(`name: x
backends: [{name: b1, stack: ipv4}]
client: {target: xds, listener: svc}
steps:
  - at: 0s
    xds:
      endpoints:
        - cluster: c1
          priorities:
            - localities:
                - name: z1
                  endpoints:
                    - addr: b1/ipv4
                      invalid_additional_addresses: ` + forms + `
end: 1s
`)
	}
	s, err := scenario.Decode("x.yaml", doc("[not_ip, unset]"))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Steps[0].Action.(scenario.SetXDS).Resources.Endpoints[0].Priorities[0].Localities[0].Endpoints[0]
	if want := []string{xds.InvalidAddrNotIP, xds.InvalidAddrUnset}; !slices.Equal(e.InvalidAdditionalAddrs, want) {
		t.Errorf("forms = %v, want %v", e.InvalidAdditionalAddrs, want)
	}
	_, err = scenario.Decode("x.yaml", doc("[unset, pipe]"))
	var ve *scenario.Error
	const field = "steps[0].xds.endpoints[0].priorities[0].localities[0].endpoints[0].invalid_additional_addresses[1]"
	if !errors.As(err, &ve) || ve.Line != 14 || ve.Field != field {
		t.Errorf("Decode(unknown form) = %v, want an *Error on line 14, %s", err, field)
	}
}
