package recorder_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// startLab starts a lab with one dual-stack backend whose IPv6 address
// drops SYNs, and returns it with the backend's two addresses.
func startLab(t *testing.T) (l *netlab.Lab, v4, v6 netip.AddrPort) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("recorder lab test: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := netlab.Start(ctx, netlab.Config{Backends: []netlab.BackendConfig{{Name: "b1"}}})
	if err != nil {
		t.Fatalf("netlab.Start: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	v4, _ = l.Addr("b1", netlab.IPv4)
	v6, _ = l.Addr("b1", netlab.IPv6)
	if err := l.SetFault(v6, netlab.FaultDrop); err != nil {
		t.Fatal(err)
	}
	return l, v4, v6
}

// callThroughRecorder opens a real grpc-go channel with lbConfig as its
// default service config, resolving to one endpoint [v6, v4], and sends one
// wait-for-ready RPC named r1.
func callThroughRecorder(t *testing.T, l *netlab.Lab, lbConfig string, v4, v6 netip.AddrPort) {
	t.Helper()
	r := manual.NewBuilderWithScheme("lab")
	r.InitialState(resolver.State{Endpoints: []resolver.Endpoint{{Addresses: []resolver.Address{{Addr: v6.String()}, {Addr: v4.String()}}}}})
	cc, err := grpc.NewClient("lab:///b1", grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(l.GRPCDialer()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"conform_recorder":`+lbConfig+`}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, recorder.RPCIDKey, "r1")
	if name, err := netlab.CallName(ctx, cc, grpc.WaitForReady(true)); err != nil || name != "b1" {
		t.Fatalf("RPC r1: %q, %v", name, err)
	}
}

// subchannelFor returns the id of the subchannel created for exactly addr.
func subchannelFor(evs []trace.Event, addr string) string {
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindSubchannelNew)) {
		if slices.Equal(e.Addrs, []string{addr}) {
			return e.Subchannel
		}
	}
	return ""
}

// checkHappyEyeballsTrace verifies the recorded events of one r1 over
// [dropped v6, healthy v4]: a subchannel per address, READY on the IPv4 one
// only, r1 picked there, the IPv6 one shut down, and a valid trace.
func checkHappyEyeballsTrace(t *testing.T, buf *recorder.Buffer, v4, v6 string) []trace.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := buf.Wait(ctx, func(evs []trace.Event) bool {
		sc6 := subchannelFor(evs, v6)
		return sc6 != "" && len(trace.Select(evs, trace.OfKind(trace.KindSubchannelShutdown), trace.InLane("subchannel:"+sc6))) > 0
	})
	if err != nil {
		t.Fatalf("the IPv6 subchannel was never shut down: %v\n%s", err, lines(evs))
	}
	sc4, sc6 := subchannelFor(evs, v4), subchannelFor(evs, v6)
	if sc4 == "" || sc6 == "" || sc6 != "sc1" || sc4 != "sc2" {
		t.Fatalf("subchannels: IPv6 %q, IPv4 %q; want sc1 for [%s] then sc2 for [%s]:\n%s", sc6, sc4, v6, v4, lines(evs))
	}
	ready := trace.Select(evs, trace.OfKind(trace.KindSubchannelState), func(e trace.Event) bool { return e.State == "READY" })
	if len(ready) != 1 || ready[0].Subchannel != sc4 || ready[0].Addr != v4 {
		t.Errorf("READY events %v, want one, on %s (%s)", ready, sc4, v4)
	}
	picked := trace.Select(evs, trace.OfKind(trace.KindPick), func(e trace.Event) bool { return e.RPC == "r1" && e.Err == "" })
	if len(picked) == 0 || picked[len(picked)-1].Subchannel != sc4 || picked[len(picked)-1].Addr != v4 {
		t.Errorf("picks of r1 %v, want the last on %s (%s)", picked, sc4, v4)
	}
	checkReadable(t, evs)
	return evs
}

// checkReadable writes evs as a trace and reads it back strictly.
func checkReadable(t *testing.T, evs []trace.Event) {
	t.Helper()
	sc := scenario.New("recorder-lab").
		Backend("b1", scenario.Dual).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(0, scenario.RPC("r1", scenario.WaitForReady())).
		End(10 * time.Second).
		MustBuild()
	tr := &trace.Trace{Header: trace.NewHeader(sc, "grpc-go", trace.ModeLab, 0), Events: evs}
	data, err := trace.Canonical(tr)
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	back, err := trace.Read("recorded.jsonl", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the trace reader refuses the recorded trace: %v", err)
	}
	if len(back.Events) != len(evs) {
		t.Fatalf("read back %d events, recorded %d", len(back.Events), len(evs))
	}
}

// TestLab_RecordsGRPCGoPickFirstHappyEyeballs verifies the recorder around
// grpc-go's own pick_first, configured exactly as a user would (default
// sink), in a real channel whose IPv6 address drops SYNs.
func TestLab_RecordsGRPCGoPickFirstHappyEyeballs(t *testing.T) {
	l, v4, v6 := startLab(t)
	buf := recorder.NewBuffer(0)
	t.Cleanup(recorder.RegisterSink("", buf))
	callThroughRecorder(t, l, `{"child":[{"pick_first":{}}]}`, v4, v6)
	evs := checkHappyEyeballsTrace(t, buf, v4.String(), v6.String())
	checkFieldEnvironment(t, evs, v4.String(), v6.String())
}

// checkFieldEnvironment verifies the field-bug flow on a real recording:
// the environment inferred is one dual-stack backend whose IPv6 address
// drops, from the start.
func checkFieldEnvironment(t *testing.T, evs []trace.Event, v4, v6 string) {
	t.Helper()
	s, m, err := replay.Environment(evs)
	if err != nil {
		t.Fatal(err)
	}
	if m[v6] != "b1/ipv6" || m[v4] != "b1/ipv4" || len(s.Backends) != 1 || s.Backends[0].Stack != scenario.Dual {
		t.Errorf("mapping %v, backends %v; want one dual-stack b1", m, s.Backends)
	}
	var faults []scenario.SetFault
	rpcAt := time.Duration(-1)
	for _, st := range s.Steps {
		switch a := st.Action.(type) {
		case scenario.SetFault:
			if st.At == 0 {
				faults = append(faults, a)
			}
		case scenario.ClearFault:
			t.Errorf("inferred a clear of %s at %v: the drop lasts the whole run", a.Addr, st.At)
		case scenario.StartRPC:
			if a.ID == "r1" {
				rpcAt = st.At
			}
		}
	}
	if len(faults) != 1 || faults[0].Addr != "b1/ipv6" || faults[0].Fault != scenario.Drop {
		t.Errorf("inferred faults from the start %v, want b1/ipv6 drop only", faults)
	}
	if want := picksOf(evs, "r1")[0].T; rpcAt != want {
		t.Errorf("RPC r1 at %v, want at its first pick %v", rpcAt, want)
	}
}

func picksOf(evs []trace.Event, id string) []trace.Event {
	return trace.Select(evs, trace.OfKind(trace.KindPick), func(e trace.Event) bool { return e.RPC == id })
}

// TestLab_RecordsConformPickFirstWithTimers verifies the recorder around
// conform_pick_first, with a named sink and a ring limit: the child's
// Connection Attempt Delay timer is recorded through the recorder's wall
// clock, started at the first connect and fired about 250 ms later.
func TestLab_RecordsConformPickFirstWithTimers(t *testing.T) {
	l, v4, v6 := startLab(t)
	buf := recorder.NewBuffer(1000)
	sink := fmt.Sprintf("lab-%s", t.Name())
	t.Cleanup(recorder.RegisterSink(sink, buf))
	callThroughRecorder(t, l, `{"child":[{"conform_pick_first":{"shuffleAddressList":false}}],"sink":"`+sink+`"}`, v4, v6)
	evs := checkHappyEyeballsTrace(t, buf, v4.String(), v6.String())
	starts := trace.Select(evs, trace.OfKind(trace.KindTimerStart), func(e trace.Event) bool { return e.Timer == "connection attempt delay" })
	fires := trace.Select(evs, trace.OfKind(trace.KindTimerFire), func(e trace.Event) bool { return e.Timer == "connection attempt delay" })
	if len(starts) == 0 || starts[0].Duration != 250*time.Millisecond {
		t.Fatalf("Connection Attempt Delay starts %v, want the first for 250ms", starts)
	}
	if len(fires) == 0 || fires[0].TimerID != starts[0].TimerID {
		t.Fatalf("the first Connection Attempt Delay (id %d) never fired: %v", starts[0].TimerID, fires)
	}
	if gap := fires[0].T - starts[0].T; gap < 250*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("the timer fired %v after it started, want 250–400 ms", gap)
	}
}
