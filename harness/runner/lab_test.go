package runner

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

func requireLab(t *testing.T) {
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
	tr, err := Lab(context.Background(), heDroppedIPv6(), Options{Seed: 1})
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
		netlab.EventPreface, netlab.EventRPC, netlab.EventFaultSet, netlab.EventFaultClear, netlab.EventBackendDown, netlab.EventBackendUp} {
		if !slices.Contains(kinds, trace.Kind(k)) {
			t.Errorf("lab event kind %q is not a trace kind", k)
		}
	}
}
