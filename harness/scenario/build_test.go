package scenario

import (
	"testing"
	"time"
)

// TestFinishAfterEveryRPC_WaitsForEveryResult verifies the run ends on as
// many rpc-results as RPCs were started before it (any order), not on one
// RPC's result.
func TestFinishAfterEveryRPC_WaitsForEveryResult(t *testing.T) {
	s := New("finish").Backend("b1", IPv4Only).
		At(0, Resolve(EP("b1/ipv4"))).
		At(time.Millisecond, RPC("r1")).
		At(2*time.Millisecond, RPC("r2")).
		After(On("rpc-result").WithRPC("r1"), RPC("r3")).
		FinishAfterEveryRPC().
		End(time.Second).
		MustBuild()
	last := s.Steps[len(s.Steps)-1]
	if _, ok := last.Action.(EndRun); !ok || last.After == nil {
		t.Fatalf("last step %+v: want a Finish after a condition", last)
	}
	if c := *last.After; c.Kind != "rpc-result" || c.RPC != "" || c.N() != 3 {
		t.Errorf("finish condition %+v: want 3 rpc-results of any RPC", c)
	}
}
