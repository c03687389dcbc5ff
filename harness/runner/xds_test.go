package runner

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
)

const cdsType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// aggregateResources is an aggregate cluster over eds1 (b1) and eds2 (b2),
// each round_robin; badIdle gives eds1 an idle_timeout beyond
// google.protobuf.Duration's range (A75: NACK).
func aggregateResources(badIdle bool) xds.Resources {
	eds1 := xds.Cluster{Name: "eds1", Type: xds.ClusterEDS}
	if badIdle {
		eds1.UpstreamConfig = &xds.UpstreamConfig{HTTPProtocolOptions: &xds.HTTPProtocolOptions{
			IdleTimeout: &xds.Duration{Seconds: 315576000001},
		}}
	}
	ep := func(a scenario.Addr) []xds.Priority {
		return []xds.Priority{{Localities: []xds.Locality{{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{{Addr: a}}}}}}
	}
	return xds.Resources{
		Listeners:    []xds.Listener{{Name: "svc.conform", RouteConfig: "rc1"}},
		RouteConfigs: []xds.RouteConfig{{Name: "rc1", Cluster: "agg"}},
		Clusters: []xds.Cluster{
			{Name: "agg", Type: xds.ClusterAggregate, Clusters: []string{"eds1", "eds2"}},
			eds1,
			{Name: "eds2", Type: xds.ClusterEDS},
		},
		Endpoints: []xds.LoadAssignment{
			{Cluster: "eds1", Priorities: ep("b1/ipv4")},
			{Cluster: "eds2", Priorities: ep("b2/ipv4")},
		},
	}
}

// xdsAggregateFailover: RPCs go to the aggregate's first cluster (b1); an
// update NACKed for its idle_timeout leaves that configuration serving (r2
// on b1); when b1 resets and goes down the channel fails over to the second
// cluster (r3 on b2).
//
// r3 goes once the failover's subchannel (b2's, made only when the first
// cluster failed) is READY, not 300 ms after b1 went down: sent before the
// channel saw b1's connection close (a loaded machine can take that
// long), it could go out on that connection and fail. Before that READY
// the channel's picker queues, so r3 waits for the failover's picker.
func xdsAggregateFailover() *scenario.Scenario {
	return scenario.New("xds-aggregate-failover").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS("svc.conform").
		At(0, scenario.ServeXDS(aggregateResources(false))).
		At(100*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(3*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.ServeXDS(aggregateResources(true))).
		AfterDelay(scenario.On("xds-request").WithXDS("NACK", "CDS"), 50*time.Millisecond,
			scenario.RPC("r2", scenario.WaitForReady(), scenario.Deadline(3*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r2"), scenario.Fault("b1/ipv4", scenario.Reset)).
		AfterDelay(scenario.On("rpc-result").WithRPC("r2"), time.Millisecond, scenario.Stop("b1")).
		After(scenario.On("subchannel-state").WithState("READY").WithAddr("b2/ipv4"),
			scenario.RPC("r3", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r3"), scenario.Finish()).
		End(20 * time.Second).
		MustBuild()
}

// checkAggregateFailover checks what both modes must show.
func checkAggregateFailover(t *testing.T, tr *trace.Trace) {
	t.Helper()
	want := map[string]string{"r1": "b1", "r2": "b1", "r3": "b2"}
	for _, e := range tr.Events {
		if e.Kind != trace.KindRPCResult {
			continue
		}
		if e.Backend != want[e.RPC] || e.Code != "OK" {
			t.Errorf("%s answered by %q (%s %s), want %s", e.RPC, e.Backend, e.Code, e.Err, want[e.RPC])
		}
		delete(want, e.RPC)
	}
	if len(want) > 0 {
		t.Errorf("no result for %v", want)
	}
	var nacks []trace.Event
	acks := map[string]bool{}
	for _, e := range tr.Events {
		if e.Kind != trace.KindXDSRequest || e.Source != trace.SourceControlPlane {
			continue
		}
		if e.Node != xdsNode {
			t.Errorf("xds-request from node %q, want %q", e.Node, xdsNode)
		}
		switch e.XDS {
		case trace.XDSNACK:
			nacks = append(nacks, e)
		case trace.XDSACK:
			acks[trace.Lane(e)] = true
		}
	}
	for _, l := range []string{"xds:LDS", "xds:RDS", "xds:CDS", "xds:EDS"} {
		if !acks[l] {
			t.Errorf("no ACK in lane %s", l)
		}
	}
	if len(nacks) != 1 {
		t.Fatalf("%d NACKs, want 1 (of CDS version 2):\n%s", len(nacks), dump(tr.Events))
	}
	n := nacks[0]
	if n.TypeURL != cdsType || n.Version != "1" || n.Detail != "rejected 2" || n.Code != "INVALID_ARGUMENT" ||
		!strings.Contains(n.Err, "idle_timeout") || !strings.Contains(n.Err, "eds1") {
		t.Errorf("NACK %+v: want CDS, version 1, rejected 2, INVALID_ARGUMENT, a detail naming eds1's idle_timeout", n)
	}
	cu := 0
	for _, e := range tr.Events {
		if e.Kind == trace.KindResolverError {
			t.Errorf("resolver-error %q: the configuration is never in doubt", e.Err)
		}
		if e.Kind == trace.KindConfigUpdate {
			cu++
			if !strings.HasPrefix(e.Detail, `{"children":{"eds1":`) {
				t.Errorf("config-update %s, want the aggregate's conform_priority config", e.Detail)
			}
		}
	}
	if cu != 1 {
		t.Errorf("%d config-update events, want 1 (the NACKed update changes nothing)", cu)
	}
}

// TestSim_XDSAggregateFailoverAndNACK verifies, in simulation, an aggregate
// cluster's routing and failover and a NACKed update that leaves the
// previous configuration serving, with the NACK's detail in the trace.
func TestSim_XDSAggregateFailoverAndNACK(t *testing.T) {
	tr, err := Run(context.Background(), xdsAggregateFailover(), Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkAggregateFailover(t, tr)
}

// TestSim_XDSSameSeedSameBytes verifies an xDS scenario's simulated trace is
// reproducible byte for byte.
func TestSim_XDSSameSeedSameBytes(t *testing.T) {
	var out [2][]byte
	for i := range out {
		tr, err := Run(context.Background(), xdsAggregateFailover(), Reference, trace.ModeSim, Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = trace.Canonical(tr); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("two runs with the same seed differ")
	}
	if !bytes.Contains(out[0], []byte(`"kind":"xds-request"`)) {
		t.Error("the trace has no xds-request")
	}
}

// TestLab_XDSAggregateFailoverAndNACK verifies the same scenario in the lab:
// the reference xDS resolver against the lab's management server, the
// server's view of the ACKs and the NACK in the trace, routing to the first
// cluster, the NACKed update changing nothing, failover to the second.
func TestLab_XDSAggregateFailoverAndNACK(t *testing.T) {
	requireLab(t)
	tr, err := Run(context.Background(), xdsAggregateFailover(), Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkAggregateFailover(t, tr)
	if t.Failed() {
		t.Logf("trace:\n%s", dump(tr.Events))
	}
	b, err := trace.Canonical(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trace.Read("lab.jsonl", bytes.NewReader(b)); err != nil {
		t.Errorf("the lab trace does not read back: %v", err)
	}
}

// xdsLogicalDNS: a LOGICAL_DNS cluster whose name resolves to b1, then,
// once r1 has its answer, to b2 while b1 goes down; r2 goes once the
// policy has seen b1 go (it asks to re-resolve).
//
// The change and r2 wait for those events: at fixed times (1 s and 2 s)
// b1 could go before r1, whose xDS exchange a loaded machine delays, had
// its answer, and r2 could go before the channel saw b1's connection
// close. r1's deadline only bounds a hang.
func xdsLogicalDNS() *scenario.Scenario {
	res := xds.Resources{
		Listeners:    []xds.Listener{{Name: "svc.conform", RouteConfig: "rc1"}},
		RouteConfigs: []xds.RouteConfig{{Name: "rc1", Cluster: "dns1"}},
		Clusters:     []xds.Cluster{{Name: "dns1", Type: xds.ClusterLogicalDNS, DNSHost: "svc.conform"}},
	}
	return scenario.New("xds-logical-dns").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS("svc.conform").
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(0, scenario.ServeXDS(res)).
		At(100*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Resolve(scenario.EP("b2/ipv4"))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Stop("b1")).
		After(scenario.On("resolve-now"), scenario.RPC("r2", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r2"), scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
}

// TestSim_XDSLogicalDNSReResolves verifies the simulated xDS resolver
// answers the policy's re-resolution request with a new LOGICAL_DNS lookup
// (A37: the DNS discovery mechanism re-resolves): after b1 goes down and the
// name now resolves to b2, the next RPC is answered by b2 with no xds step.
func TestSim_XDSLogicalDNSReResolves(t *testing.T) {
	tr, err := Run(context.Background(), xdsLogicalDNS(), Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkLogicalDNS(t, tr)
}

// TestLab_XDSLogicalDNSReResolves is the same in the lab, where the
// reference resolver's lookups are answered from the resolve steps.
func TestLab_XDSLogicalDNSReResolves(t *testing.T) {
	requireLab(t)
	tr, err := Run(context.Background(), xdsLogicalDNS(), Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	checkLogicalDNS(t, tr)
}

func checkLogicalDNS(t *testing.T, tr *trace.Trace) {
	t.Helper()
	want := map[string]string{"r1": "b1", "r2": "b2"}
	for _, e := range tr.Events {
		if e.Kind == trace.KindRPCResult && (e.Backend != want[e.RPC] || e.Code != "OK") {
			t.Errorf("%s answered by %q (%s %s), want %s\n%s", e.RPC, e.Backend, e.Code, e.Err, want[e.RPC], dump(tr.Events))
		}
		if e.Kind == trace.KindRPCResult {
			delete(want, e.RPC)
		}
	}
	if len(want) > 0 {
		t.Errorf("no result for %v\n%s", want, dump(tr.Events))
	}
	var updates [][]string
	for _, e := range tr.Events {
		if e.Kind == trace.KindResolverUpdate {
			updates = append(updates, e.Endpoints[0])
		}
	}
	b2 := AddrOf("b2", 1, scenario.IPv4)
	if len(updates) < 2 || updates[len(updates)-1][0] != b2 {
		t.Errorf("resolver updates %v, want a last one resolving to %s after re-resolution", updates, b2)
	}
}
