package scenario

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func xdsValid() XDSResources {
	return XDSResources{
		Version:      "7",
		Listeners:    []XDSListener{{Name: "svc", RouteConfig: "rc"}},
		RouteConfigs: []XDSRouteConfig{{Name: "rc", Cluster: "agg"}},
		Clusters: []XDSCluster{
			{Name: "agg", Type: ClusterAggregate, Clusters: []string{"c1", "dns"}},
			{Name: "c1", Type: ClusterEDS, LBPolicy: XDSRingHash, MinRingSize: 8, MaxRingSize: 1024,
				OutlierDetection: &XDSOutlierDetection{Interval: time.Second, MaxEjectionTime: time.Minute, MaxEjectionPercent: 100,
					SuccessRate: &XDSSuccessRate{StdevFactor: 1900, Enforcement: 100, MinimumHosts: 2, RequestVolume: 10}},
				UpstreamConfig: &XDSUpstreamConfig{HTTPProtocolOptions: &XDSHTTPProtocolOptions{Common: true,
					IdleTimeout: &XDSDuration{Seconds: 315576000001, Nanos: -1}}}},
			{Name: "dns", Type: ClusterLogicalDNS, DNSHost: "svc.conform", DNSPort: 8080, LBPolicy: XDSPickFirst, Shuffle: true,
				UpstreamConfig: &XDSUpstreamConfig{HTTPProtocolOptions: &XDSHTTPProtocolOptions{}}},
			{Name: "other", Type: ClusterEDS, UpstreamConfig: &XDSUpstreamConfig{TypeURL: "type.googleapis.com/google.protobuf.Empty"}},
		},
		Endpoints: []XDSLoadAssignment{{Cluster: "c1", Priorities: []XDSPriority{
			{Localities: []XDSLocality{{Name: "z1", Weight: 2, Endpoints: []XDSEndpoint{
				{Addr: "b1/ipv6", AdditionalAddrs: []Addr{"b1/ipv4"}, Health: HealthDraining, Weight: 5},
				{Addr: "b2/ipv4", InvalidAdditionalAddrs: InvalidAddrForms()},
			}}}},
			{}, // an empty priority keeps its place
			{Localities: []XDSLocality{{Name: "z2"}}},
		}}},
	}
}

func xdsScenario() *Builder {
	return New("xds").Backend("b1", Dual).Backend("b2", V4Only).XDS("svc").
		At(0, xdsValid()).
		After(On("xds-request"), XDSResources{}).
		End(time.Second)
}

// TestXDS_RoundTrips verifies an xds step with every field set survives
// YAML and JSON (a trace header's form) unchanged.
func TestXDS_RoundTrips(t *testing.T) {
	s := xdsScenario().MustBuild()
	data, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode("x.yaml", data)
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
	var back Scenario
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("Unmarshal: %v\n%s", err, js)
	}
	if diff := cmp.Diff(s, &back); diff != "" {
		t.Fatalf("JSON round trip (-want +got):\n%s", diff)
	}
}

// TestXDS_ValidateProblems verifies the xds checks name the field.
func TestXDS_ValidateProblems(t *testing.T) {
	with := func(f func(*XDSResources)) *Builder {
		x := xdsValid()
		f(&x)
		return New("v").Backend("b1", Dual).Backend("b2", V4Only).XDS("svc").At(0, x).End(time.Second)
	}
	c1 := func(f func(*XDSCluster)) *Builder { return with(func(x *XDSResources) { f(&x.Clusters[1]) }) }
	ep := func(f func(*XDSEndpoint)) *Builder {
		return with(func(x *XDSResources) { f(&x.Endpoints[0].Priorities[0].Localities[0].Endpoints[0]) })
	}
	const cp = "steps[0].xds.clusters[1]"
	const epp = "steps[0].xds.endpoints[0].priorities[0].localities[0].endpoints[0]"
	cases := []struct {
		name  string
		b     *Builder
		field string
	}{
		{"xds without listener", New("v").Target(TargetXDS).End(time.Second), "client.listener"},
		{"listener without xds", New("v").End(time.Second), ""},
		{"xds with lb_policy", New("v").XDS("l").LB("p", "").End(time.Second), "client.lb_policy"},
		{"xds with service config", New("v").XDS("l").ServiceConfig(`{}`).End(time.Second), "client.service_config"},
		{"step without xds target", New("v").At(0, XDSResources{}).End(time.Second), "steps[0].xds"},
		{"version with space", with(func(x *XDSResources) { x.Version = "a b" }), "steps[0].xds.version"},
		{"duplicate listener", with(func(x *XDSResources) { x.Listeners = append(x.Listeners, x.Listeners[0]) }), "steps[0].xds.listeners[1].name"},
		{"listener without route", with(func(x *XDSResources) { x.Listeners[0].RouteConfig = "" }), "steps[0].xds.listeners[0].route_config"},
		{"route without cluster", with(func(x *XDSResources) { x.RouteConfigs[0].Cluster = "" }), "steps[0].xds.route_configs[0].cluster"},
		{"duplicate cluster", c1(func(c *XDSCluster) { c.Name = "agg" }), cp + ".name"},
		{"unknown type", c1(func(c *XDSCluster) { c.Type = "STATIC" }), cp + ".type"},
		{"clusters on EDS", c1(func(c *XDSCluster) { c.Clusters = []string{"x"} }), cp + ".clusters"},
		{"dns host on EDS", c1(func(c *XDSCluster) { c.DNSHost = "h" }), cp + ".dns_host"},
		{"LOGICAL_DNS without host", with(func(x *XDSResources) { x.Clusters[2].DNSHost = "" }), "steps[0].xds.clusters[2].dns_host"},
		{"unknown policy", c1(func(c *XDSCluster) { c.LBPolicy = "least_request" }), cp + ".lb_policy"},
		{"shuffle on ring_hash", c1(func(c *XDSCluster) { c.Shuffle = true }), cp + ".shuffle"},
		{"ring size on pick_first", with(func(x *XDSResources) { x.Clusters[2].MinRingSize = 1 }), "steps[0].xds.clusters[2].min_ring_size"},
		{"ring sizes inverted", c1(func(c *XDSCluster) { c.MinRingSize = 2048 }), cp + ".max_ring_size"},
		{"ejection percent", c1(func(c *XDSCluster) { c.OutlierDetection.MaxEjectionPercent = 101 }), cp + ".outlier_detection.max_ejection_percent"},
		{"negative interval", c1(func(c *XDSCluster) { c.OutlierDetection.Interval = -1 }), cp + ".outlier_detection.interval"},
		{"success rate off", c1(func(c *XDSCluster) { c.OutlierDetection.SuccessRate.Enforcement = 0 }), cp + ".outlier_detection.success_rate.enforcement"},
		{"both upstream configs", c1(func(c *XDSCluster) { c.UpstreamConfig.TypeURL = "a/b" }), cp + ".upstream_config"},
		{"no upstream config", c1(func(c *XDSCluster) { c.UpstreamConfig = &XDSUpstreamConfig{} }), cp + ".upstream_config"},
		{"bad type URL", with(func(x *XDSResources) { x.Clusters[3].UpstreamConfig.TypeURL = "Empty" }), "steps[0].xds.clusters[3].upstream_config.type_url"},
		{"duplicate assignment", with(func(x *XDSResources) { x.Endpoints = append(x.Endpoints, x.Endpoints[0]) }), "steps[0].xds.endpoints[1].cluster"},
		{"duplicate locality", with(func(x *XDSResources) {
			x.Endpoints[0].Priorities[0].Localities = append(x.Endpoints[0].Priorities[0].Localities, XDSLocality{Name: "z1"})
		}), "steps[0].xds.endpoints[0].priorities[0].localities[1].name"},
		{"undefined backend", ep(func(e *XDSEndpoint) { e.Addr = "b9/ipv4" }), epp + ".addr"},
		{"additional address family", ep(func(e *XDSEndpoint) { e.AdditionalAddrs = []Addr{"b2/ipv6"} }), epp + ".additional_addresses[0]"},
		{"unknown health", ep(func(e *XDSEndpoint) { e.Health = "SERVING" }), epp + ".health"},
		{"unknown invalid address form", ep(func(e *XDSEndpoint) { e.InvalidAdditionalAddrs = []string{"unset", "pipe"} }),
			epp + ".invalid_additional_addresses[1]"},
	}
	cases[1].b.s.Client.Listener, cases[1].field = "l", "client.listener"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.b.Build()
			var e *Error
			if !errors.As(err, &e) || e.Field != c.field {
				t.Fatalf("Build() error = %v, want an *Error on %s", err, c.field)
			}
		})
	}
	// Out-of-range idle timeouts, an unknown upstream type and dangling
	// references are valid scenarios (NACK and does-not-exist cases).
	if _, err := with(func(x *XDSResources) { x.RouteConfigs[0].Cluster = "nowhere" }).Build(); err != nil {
		t.Errorf("dangling reference refused: %v", err)
	}
}

// TestXDS_InvalidAdditionalAddressesYAML verifies the YAML form of A61's
// NACK cases: a list of form names, read in order; an unknown form is
// refused on its line, naming its field.
func TestXDS_InvalidAdditionalAddressesYAML(t *testing.T) {
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
	s, err := Decode("x.yaml", doc("[not_ip, unset]"))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Steps[0].Action.(XDSResources).Endpoints[0].Priorities[0].Localities[0].Endpoints[0]
	if want := []string{InvalidAddrNotIP, InvalidAddrUnset}; !slices.Equal(e.InvalidAdditionalAddrs, want) {
		t.Errorf("forms = %v, want %v", e.InvalidAdditionalAddrs, want)
	}
	_, err = Decode("x.yaml", doc("[unset, pipe]"))
	var ve *Error
	const field = "steps[0].xds.endpoints[0].priorities[0].localities[0].endpoints[0].invalid_additional_addresses[1]"
	if !errors.As(err, &ve) || ve.Line != 14 || ve.Field != field {
		t.Errorf("Decode(unknown form) = %v, want an *Error on line 14, %s", err, field)
	}
}
