package resolver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/hierarchy"
	"github.com/conformlab/conform/reference/outlierdetection"
	"github.com/conformlab/conform/reference/overridehost"
	"github.com/conformlab/conform/reference/priority"
	"github.com/conformlab/conform/reference/ringhash"
	"github.com/conformlab/conform/reference/xds/client"
	"google.golang.org/grpc/resolver"
)

func locality(zone string, w uint32, eps ...client.Endpoint) client.Locality {
	return client.Locality{ID: client.LocalityID{Region: "r", Zone: zone}, Weight: w, Endpoints: eps}
}

func ep(status client.HealthStatus, addrs ...string) client.Endpoint {
	return client.Endpoint{Addresses: addrs, HealthStatus: status, Weight: 1}
}

func eds(name string, lb string, prios ...client.Priority) (*client.Cluster, *client.Endpoints) {
	return &client.Cluster{Name: name, Kind: client.KindEDS, EDSServiceName: name + "-eds", LBPolicy: json.RawMessage(lb),
			IdleTimeout: client.DefaultIdleTimeout, OverrideHostStatus: []string{"UNKNOWN", "HEALTHY"}},
		&client.Endpoints{Name: name + "-eds", Priorities: prios}
}

func leafConfig() *client.Config {
	c, e := eds("C", `{"conform_round_robin":{}}`,
		client.Priority{Localities: []client.Locality{locality("z0", 3, ep(client.HealthHealthy, "198.18.0.10:443", "[fd00:c0f::10]:443"))}},
		client.Priority{Localities: []client.Locality{locality("z1", 1, ep(client.HealthDraining, "198.18.0.11:443"))}})
	return &client.Config{Cluster: "C", Leaves: []string{"C"}, Clusters: map[string]*client.Cluster{"C": c},
		Endpoints: map[string]*client.Endpoints{"C-eds": e}, LBPolicies: map[string]json.RawMessage{"C": c.LBPolicy}}
}

type epView struct {
	Addrs  []string
	Path   []string
	Health string
}

func view(eps []resolver.Endpoint) []epView {
	var out []epView
	for _, e := range eps {
		v := epView{Path: hierarchy.FromEndpoint(e), Health: overridehost.HealthStatus(e)}
		for _, a := range e.Addresses {
			v.Addrs = append(v.Addrs, a.Addr)
		}
		out = append(out, v)
	}
	return out
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestBuild_LeafClusterTree verifies A75's tree for a cluster that is not an
// aggregate, exactly: outlier_detection (no-op when CDS has none) over
// xds_override_host (statuses, idle_timeout) over priority "C/pN" over
// weighted_target "C/pN/<locality>" over the cluster's policy, the
// priority following A56's latest revision, its EDS children ignoring
// re-resolution requests (A37); endpoints
// keep the EDS address then additional_addresses, carry their EDS health
// status and the paths [C/pN, C/pN/<locality>].
func TestBuild_LeafClusterTree(t *testing.T) {
	eps, lb, err := Build(leafConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := compact(t, `{"conform_outlier_detection":{"childPolicy":[{"conform_xds_override_host":{
		"overrideHostStatus":["UNKNOWN","HEALTHY"],"idleTimeout":"3600s","childPolicy":[{"conform_priority":{
		"children":{
		  "C/p0":{"config":[{"conform_weighted_target":{"targets":{"C/p0/{\"region\":\"r\",\"zone\":\"z0\"}":{"weight":3,"childPolicy":[{"conform_round_robin":{}}]}}}}],"ignore_reresolution_requests":true},
		  "C/p1":{"config":[{"conform_weighted_target":{"targets":{"C/p1/{\"region\":\"r\",\"zone\":\"z1\"}":{"weight":1,"childPolicy":[{"conform_round_robin":{}}]}}}}],"ignore_reresolution_requests":true}},
		"priorities":["C/p0","C/p1"],"revision":"latest"}}]}}]}}`)
	if got := compact(t, string(lb)); got != want {
		t.Errorf("LB config =\n%s\nwant\n%s", got, want)
	}
	wantEps := []epView{
		{[]string{"198.18.0.10:443", "[fd00:c0f::10]:443"}, []string{"C/p0", `C/p0/{"region":"r","zone":"z0"}`}, "HEALTHY"},
		{[]string{"198.18.0.11:443"}, []string{"C/p1", `C/p1/{"region":"r","zone":"z1"}`}, "DRAINING"},
	}
	if got := view(eps); !reflect.DeepEqual(got, wantEps) {
		t.Errorf("endpoints = %+v, want %+v", got, wantEps)
	}
	// The policies parse the tree they are given.
	var top map[string]json.RawMessage
	_ = json.Unmarshal(lb, &top)
	if _, err := sim.New(outlierdetection.Name, string(top[outlierdetection.Name]), sim.Options{}); err != nil {
		t.Errorf("%s rejects the tree: %v", outlierdetection.Name, err)
	}
}

func aggregateConfig() *client.Config {
	c1, e1 := eds("C1", `{"conform_round_robin":{}}`,
		client.Priority{Localities: []client.Locality{locality("z0", 1, ep(client.HealthHealthy, "198.18.0.10:443"))}},
		client.Priority{Localities: []client.Locality{locality("z1", 1, ep(client.HealthUnknown, "198.18.0.11:443"))}})
	c1.OutlierDetection = json.RawMessage(`{"interval":"2s"}`)
	c2 := &client.Cluster{Name: "C2", Kind: client.KindLogicalDNS, DNSHost: "fallback.lab", DNSPort: 443,
		LBPolicy: json.RawMessage(`{"conform_pick_first":{"shuffleAddressList":false}}`), IdleTimeout: 90 * time.Second,
		OverrideHostStatus: []string{"HEALTHY", "DRAINING"}}
	agg := &client.Cluster{Name: "A", Kind: client.KindAggregate, Children: []string{"C1", "C2"}, LBPolicy: json.RawMessage(`{"conform_ring_hash":{}}`)}
	return &client.Config{Cluster: "A", Leaves: []string{"C1", "C2"},
		Clusters:   map[string]*client.Cluster{"A": agg, "C1": c1, "C2": c2},
		Endpoints:  map[string]*client.Endpoints{"C1-eds": e1},
		LBPolicies: map[string]json.RawMessage{"C1": c1.LBPolicy, "C2": c2.LBPolicy}}
}

// TestBuild_AggregateTree verifies A75's aggregate tree: a priority over one
// child per flattened leaf, in order, each the leaf's own subtree with its
// own LB policy, outlier detection and override-host settings; paths gain
// the leaf's name first; the LOGICAL_DNS leaf is one endpoint with every
// address (A61).
func TestBuild_AggregateTree(t *testing.T) {
	eps, lb, err := Build(aggregateConfig(), map[string][]string{"C2": {"198.18.0.20:443", "[fd00:c0f::20]:443"}})
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]struct {
		Children map[string]struct {
			Config []map[string]json.RawMessage `json:"config"`
			Ignore bool                         `json:"ignore_reresolution_requests"`
		} `json:"children"`
		Priorities []string `json:"priorities"`
	}
	if err := json.Unmarshal(lb, &top); err != nil {
		t.Fatal(err)
	}
	p := top[priority.Name]
	if !reflect.DeepEqual(p.Priorities, []string{"C1", "C2"}) || len(p.Children) != 2 {
		t.Fatalf("aggregate priority = %s", lb)
	}
	if !p.Children["C1"].Ignore || p.Children["C2"].Ignore {
		t.Errorf("ignore_reresolution_requests: C1 %v C2 %v, want true for the EDS leaf only", p.Children["C1"].Ignore, p.Children["C2"].Ignore)
	}
	c1 := string(p.Children["C1"].Config[0][outlierdetection.Name])
	c2 := string(p.Children["C2"].Config[0][outlierdetection.Name])
	for _, want := range []string{`"interval":"2s"`, `"C1/p1"`, `"conform_round_robin"`, `"idleTimeout":"3600s"`} {
		if !strings.Contains(c1, want) {
			t.Errorf("C1 subtree lacks %s: %s", want, c1)
		}
	}
	// C2's pick_first chooses across all of the priority's endpoints: it
	// sits directly under the priority, with no weighted_target (A62, A52).
	for _, want := range []string{`"C2/p0":{"config":[{"conform_pick_first":{"shuffleAddressList":false}}]}`, `"idleTimeout":"90s"`, `"overrideHostStatus":["HEALTHY","DRAINING"]`} {
		if !strings.Contains(c2, want) {
			t.Errorf("C2 subtree lacks %s: %s", want, c2)
		}
	}
	if strings.Contains(c2, "conform_weighted_target") {
		t.Errorf("C2's pick_first is under a weighted_target: %s", c2)
	}
	if strings.Contains(string(lb), "ring_hash") {
		t.Errorf("the aggregate's LB policy leaked into the tree: %s", lb)
	}
	wantEps := []epView{
		{[]string{"198.18.0.10:443"}, []string{"C1", "C1/p0", `C1/p0/{"region":"r","zone":"z0"}`}, "HEALTHY"},
		{[]string{"198.18.0.11:443"}, []string{"C1", "C1/p1", `C1/p1/{"region":"r","zone":"z1"}`}, "UNKNOWN"},
		{[]string{"198.18.0.20:443", "[fd00:c0f::20]:443"}, []string{"C2", "C2/p0"}, "UNKNOWN"},
	}
	if got := view(eps); !reflect.DeepEqual(got, wantEps) {
		t.Errorf("endpoints = %+v, want %+v", got, wantEps)
	}
}

func served(w *sim.Channel, rpc string) string {
	for _, e := range w.Events() {
		if e.Kind == trace.KindRPCResult && e.RPC == rpc {
			if e.Backend == "" {
				return "error:" + e.Code
			}
			return e.Backend
		}
	}
	return ""
}

// TestBuild_TreeRoutesAndFailsOverInSim runs the whole aggregate tree in the
// simulator: RPCs go to C1's priority 0; with it down they go to C1's
// priority 1 (priority inside the cluster, A75); with all of C1 down they go
// to C2, the LOGICAL_DNS cluster (priority across clusters, A37/A75).
func TestBuild_TreeRoutesAndFailsOverInSim(t *testing.T) {
	eps, lb, err := Build(aggregateConfig(), map[string][]string{"C2": {"198.18.0.20:443", "[fd00:c0f::20]:443"}})
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(lb, &top)
	w, err := sim.New(priority.Name, string(top[priority.Name]), sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddBackend("c1-p0", "198.18.0.10:443")
	w.AddBackend("c1-p1", "198.18.0.11:443")
	w.AddBackend("c2", "198.18.0.20:443", "[fd00:c0f::20]:443")
	if err := w.Resolve(resolver.State{Endpoints: eps}); err != nil {
		t.Fatal(err)
	}
	step := func(rpc, want string) {
		t.Helper()
		w.StartRPC(rpc, sim.RPCOptions{WaitForReady: true})
		if !w.AdvanceUntil(func() bool { return served(w, rpc) != "" }, 2*time.Minute) {
			t.Fatalf("%s: no result within 2 min", rpc)
		}
		if got := served(w, rpc); got != want {
			t.Fatalf("%s served by %q, want %q", rpc, got, want)
		}
	}
	step("r1", "c1-p0")
	w.SetFault("198.18.0.10:443", sim.FaultDown)
	step("r2", "c1-p1")
	w.SetFault("198.18.0.11:443", sim.FaultDown)
	step("r3", "c2")
	w.SetFault("198.18.0.10:443", sim.FaultNone)
	w.Advance(3 * time.Minute) // backoff ends; priority 0 of C1 reconnects.
	step("r4", "c1-p0")
}

// TestBuild_RingHashWeights verifies every endpoint carries ring_hash's
// weight, its locality's weight times its own (A42, Changes to the xDS
// Client).
func TestBuild_RingHashWeights(t *testing.T) {
	heavy := ep(client.HealthHealthy, "198.18.0.12:443")
	heavy.Weight = 5
	c, e := eds("C", `{"conform_ring_hash":{}}`,
		client.Priority{Localities: []client.Locality{
			locality("z0", 3, ep(client.HealthHealthy, "198.18.0.10:443"), heavy),
			locality("z1", 1, ep(client.HealthHealthy, "198.18.0.11:443")),
		}})
	cfg := &client.Config{Cluster: "C", Leaves: []string{"C"}, Clusters: map[string]*client.Cluster{"C": c},
		Endpoints: map[string]*client.Endpoints{"C-eds": e}, LBPolicies: map[string]json.RawMessage{"C": c.LBPolicy}}
	eps, _, err := Build(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint32
	for _, e := range eps {
		got = append(got, ringhash.Weight(e))
	}
	if want := []uint32{3, 15, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("ring_hash weights %v, want %v", got, want)
	}
}
