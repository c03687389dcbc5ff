package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// TestLinkedGRPCGo_Sim_HappyEyeballs verifies grpc-go's own pick_first runs
// on the simulator's channel, on wall time: with b1's IPv6 address
// dropping SYNs, the IPv4 attempt starts about one Connection Attempt Delay
// (A61: 250 ms) after the IPv6 one, and b1 answers.
func TestLinkedGRPCGo_Sim_HappyEyeballs(t *testing.T) {
	tr, err := Run(context.Background(), heDroppedIPv6(), LinkedGRPCGo, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatalf("%v\n%s", err, dumpTrace(tr))
	}
	if tr.Header.Impl != LinkedGRPCGo.String() {
		t.Errorf("header impl %q, want %q", tr.Header.Impl, LinkedGRPCGo)
	}
	v6, v4 := AddrOf("b1", 0, scenario.IPv6), AddrOf("b1", 0, scenario.IPv4)
	c6, ok6 := firstOf(tr.Events, trace.KindSYN, v6)
	c4, ok4 := firstOf(tr.Events, trace.KindSYN, v4)
	if !ok6 || !ok4 {
		t.Fatalf("connection attempts: IPv6 %v, IPv4 %v:\n%s", ok6, ok4, dumpTrace(tr))
	}
	if gap := c4.T - c6.T; gap < 200*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("IPv4 attempt %v after the IPv6 one, want about 250ms:\n%s", gap, dumpTrace(tr))
	}
	if r, ok := firstOf(tr.Events, trace.KindRPCResult, ""); !ok || r.Backend != "b1" {
		t.Errorf("rpc-result %+v, want b1", r)
	}
}

// TestLinkedGRPCGo_NotApplicable verifies what grpc-go's own policies in
// this process cannot express is not-applicable, with the reason: an xDS
// target, and switches (which grpc-go reads from the process's environment).
func TestLinkedGRPCGo_NotApplicable(t *testing.T) {
	withEnv := heDroppedIPv6()
	withEnv.Client.Env = map[string]string{scenario.EnvPickFirstLBConfig: "true"}
	for _, s := range []*scenario.Scenario{xdsAggregateFailover(), withEnv} {
		_, err := Run(context.Background(), s, LinkedGRPCGo, trace.ModeSim, Options{Seed: 1})
		var na *NotApplicable
		if !errors.As(err, &na) || na.Reason == "" {
			t.Errorf("%s: err = %v, want not-applicable with a reason", s.Name, err)
		}
	}
}
