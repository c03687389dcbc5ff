package runner

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

func requireLab(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("runner: the lab needs root (CAP_NET_ADMIN) to create network namespaces")
	}
}

// TestLab_HappyEyeballsScenario verifies that the same scenario run in the
// lab gives a valid trace with the network's events (SYNs from the capture),
// the policy's events (from the recorder) and the RPC's result, and that the
// IPv4 SYN follows the dropped IPv6 SYN by about 250 ms (A61; loose bounds:
// wall time).
func TestLab_HappyEyeballsScenario(t *testing.T) {
	requireLab(t)
	tr, err := Run(context.Background(), heDroppedIPv6(), Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	v6, v4 := AddrOf("b1", 0, scenario.IPv6), AddrOf("b1", 0, scenario.IPv4)
	syn6, ok6 := firstOf(tr.Events, trace.KindSYN, v6)
	syn4, ok4 := firstOf(tr.Events, trace.KindSYN, v4)
	if !ok6 || !ok4 {
		t.Fatalf("missing SYNs (v6 %v, v4 %v) in\n%s", ok6, ok4, dump(tr.Events))
	}
	if gap := syn4.T - syn6.T; gap < 200*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("IPv4 SYN %v after IPv6 SYN, want about 250ms", gap)
	}
	for _, k := range []trace.Kind{trace.KindSubchannelNew, trace.KindSubchannelConnect, trace.KindBalancerState, trace.KindPick, trace.KindChannelState, trace.KindAccept} {
		if _, ok := firstOf(tr.Events, k, ""); !ok {
			t.Errorf("no %s event in the lab trace:\n%s", k, dump(tr.Events))
		}
	}
	if res, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || res.Backend != "b1" || res.Code != "OK" {
		t.Errorf("rpc-result %+v, want OK from b1", res)
	}
	if w := tr.Header.Env[trace.EnvStallWatch]; w != trace.StallWatchClient {
		t.Errorf("header env %s = %q, want %q: the stall watch shares the reference's process", trace.EnvStallWatch, w, trace.StallWatchClient)
	}
	b, err := trace.Canonical(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trace.Read("lab.jsonl", bytes.NewReader(b)); err != nil {
		t.Errorf("the lab trace does not read back: %v", err)
	}
}

// TestFromLab_KindsAreTraceKinds verifies that every lab event kind is a
// trace kind, so lab events never make an unreadable trace.
func TestFromLab_KindsAreTraceKinds(t *testing.T) {
	kinds := trace.Kinds()
	for _, k := range []netlab.EventKind{netlab.EventSYN, netlab.EventSYNACK, netlab.EventRST, netlab.EventAccept,
		netlab.EventPreface, netlab.EventRPC, netlab.EventFaultSet, netlab.EventFaultClear, netlab.EventBackendDown, netlab.EventBackendUp,
		netlab.EventStall} {
		if !slices.Contains(kinds, trace.Kind(k)) {
			t.Errorf("lab event kind %q is not a trace kind", k)
		}
	}
}

// TestFromLab_StallCarriesItsLength verifies that the lab's stall becomes
// a trace stall with its length as Duration.
func TestFromLab_StallCarriesItsLength(t *testing.T) {
	e := fromLab(netlab.Event{T: time.Second, Kind: netlab.EventStall, Late: 37 * time.Millisecond})
	want := trace.Event{T: time.Second, Source: trace.SourceHarness, Kind: trace.KindStall, Duration: 37 * time.Millisecond}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("fromLab(stall) = %v, want %v", e, want)
	}
}

// TestLab_SeededLikeTheSimulator verifies that a lab run draws the policy's
// randomness from the run's seed, as the simulator does: pick_first with
// shuffleAddressList (A62) connects to the endpoints in the same shuffled
// order in both modes.
func TestLab_SeededLikeTheSimulator(t *testing.T) {
	requireLab(t)
	b := scenario.New("shuffle-seeded").LB("pick_first", `{"shuffleAddressList": true}`)
	var eps []scenario.Endpoint
	for _, n := range []string{"b1", "b2", "b3", "b4", "b5", "b6"} {
		b = b.Backend(n, scenario.IPv4Only).At(0, scenario.Fault(scenario.Addr(n+"/ipv4"), scenario.Reset))
		eps = append(eps, scenario.EP(scenario.Addr(n+"/ipv4")))
	}
	// The run ends once pick_first has made its sixth subchannel: it makes
	// one per attempt, after the one before was refused, and six refusals
	// in a row (a few ms here when idle) need not fit in the fixed 200 ms
	// the run used to last on a loaded machine.
	s := b.At(0, scenario.Resolve(eps...)).After(scenario.On("subchannel-new").Times(6), scenario.Finish()).End(10 * time.Second).MustBuild()
	order := func(tr *trace.Trace) []string {
		var out []string
		for _, e := range tr.Events {
			if e.Kind == trace.KindSubchannelNew && len(e.Addrs) > 0 && !slices.Contains(out, e.Addrs[0]) {
				out = append(out, e.Addrs[0])
			}
		}
		return out
	}
	for _, seed := range []uint64{3, 4} {
		simTr, err := Run(context.Background(), s, Reference, trace.ModeSim, Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		labTr, err := Run(context.Background(), s, Reference, trace.ModeLab, Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := order(labTr), order(simTr); !slices.Equal(got, want) || len(want) != 6 {
			t.Errorf("seed %d: lab order %v, simulated order %v", seed, got, want)
		}
	}
}

// TestLab_ResolverUpdatesRecordedOnce verifies that a lab trace has each
// resolver update once (the runner's), not once more from the recorder.
func TestLab_ResolverUpdatesRecordedOnce(t *testing.T) {
	requireLab(t)
	tr, err := Run(context.Background(), heDroppedIPv6(), Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate))); n != 1 {
		t.Errorf("%d resolver-update events, want 1\n%s", n, dump(tr.Events))
	}
}

// TestLab_HealthStep verifies that the lab honours a health step: with the
// client checking the step's service (healthCheckConfig), NOT_SERVING on
// round_robin's only endpoint takes the reference's channel from READY to
// TRANSIENT_FAILURE on the same connection, and SERVING brings it back
// (A61, Generic Health Reporting Mechanism); the step is recorded as
// health-set with its service name, as the simulator records it.
func TestLab_HealthStep(t *testing.T) {
	requireLab(t)
	s := healthScenario("health-step-lab", `{"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{"serviceName":"svc"}}`, "svc")
	tr, err := Run(context.Background(), s, Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dump(tr.Events))
	}
	var states []string
	for _, e := range tr.Events {
		if e.Kind == trace.KindBalancerState && e.Policy == "" {
			states = append(states, e.State)
		}
	}
	if got, want := strings.Join(states, " "), "CONNECTING READY TRANSIENT_FAILURE READY"; got != want {
		t.Errorf("balancer states %q, want %q in\n%s", got, want, dump(tr.Events))
	}
	b1 := AddrOf("b1", 0, scenario.IPv4)
	var sets []string
	syns := 0
	for _, e := range tr.Events {
		switch {
		case e.Kind == trace.KindHealthSet && e.Addr == b1:
			sets = append(sets, e.Service+"="+e.State)
		case e.Kind == trace.KindSYN && !e.Retransmit:
			syns++
		}
	}
	if got, want := strings.Join(sets, " "), "svc=TRANSIENT_FAILURE svc=READY"; got != want {
		t.Errorf("health-set events %q, want %q", got, want)
	}
	if syns != 1 {
		t.Errorf("%d connection attempts, want 1: health is no reason to reconnect\n%s", syns, dump(tr.Events))
	}
}
