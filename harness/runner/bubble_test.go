package runner

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// TestLinkedGRPCGo_Sim_InBubble verifies what judging a balancer that reads
// the wall clock in the simulator would rest on: grpc-go's own pick_first
// (which sets its Happy Eyeballs timer with the time package) on the
// simulator's wall-mode channel, run inside a testing/synctest bubble, runs
// on the bubble's fake clock — the IPv4 attempt exactly one Connection
// Attempt Delay (A61: 250 ms) after the IPv6 one, which the wall clock
// never gives, and no wall time waited — and gives the same trace every
// time.
func TestLinkedGRPCGo_Sim_InBubble(t *testing.T) {
	var runs [2][]byte
	for i := range runs {
		synctest.Test(t, func(t *testing.T) {
			tr, err := Run(context.Background(), heDroppedIPv6(), LinkedGRPCGo, trace.ModeSim, Options{Seed: 1})
			if err != nil {
				t.Fatalf("%v\n%s", err, dumpTrace(tr))
			}
			c6, ok6 := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv6))
			c4, ok4 := firstOf(tr.Events, trace.KindSYN, AddrOf("b1", 0, scenario.IPv4))
			if !ok6 || !ok4 || c4.T-c6.T != 250*time.Millisecond {
				t.Errorf("IPv6 attempt %v at %v, IPv4 %v at %v; want the IPv4 one 250ms later, on the bubble's clock:\n%s", ok6, c6.T, ok4, c4.T, dumpTrace(tr))
			}
			runs[i], _ = json.Marshal(tr.Events)
		})
	}
	if string(runs[0]) != string(runs[1]) {
		t.Errorf("two runs in bubbles differ:\n%s\n%s", runs[0], runs[1])
	}
}
