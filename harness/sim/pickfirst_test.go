package sim

import (
	"testing"
	"time"

	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"

	"github.com/conformlab/conform/harness/trace"
)

// happyEyeballsGap runs grpc-go's own pick_first (wall time) on one endpoint
// whose first address drops SYNs and returns the time between the connects
// of the two subchannels, and whether the channel then became READY on the
// second address.
func happyEyeballsGap(t testing.TB) (time.Duration, bool) {
	w, err := New(pickfirst.Name, "", Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Virtual() {
		t.Fatal("grpc-go's pick_first is not on the clock seam but runs on virtual time")
	}
	w.AddBackend("b0", addrA, addr6)
	w.SetFault(addrA, FaultDrop)
	if err := w.ResolveEndpoints([]string{addrA, addr6}); err != nil {
		t.Fatal(err)
	}
	ready := w.AdvanceUntil(func() bool { return w.State() == connectivity.Ready }, 5*time.Second)
	c1 := kinds(w.Events(), trace.KindSubchannelConnect, "sc1")
	c2 := kinds(w.Events(), trace.KindSubchannelConnect, "sc2")
	if len(c1) == 0 || len(c2) == 0 {
		t.Fatalf("connects: sc1 %v, sc2 %v\n%s", c1, c2, dump(w.Events()))
	}
	return c2[0].T - c1[0].T, ready
}

// TestGRPCPickFirst_HappyEyeballsOnWallTime verifies that grpc-go's own
// pick_first, driven by the simulator on wall time, starts the second
// address about 250 ms (A61 Connection Attempt Delay) after the first one,
// whose SYNs are dropped, and becomes READY on it.
func TestGRPCPickFirst_HappyEyeballsOnWallTime(t *testing.T) {
	gap, ready := happyEyeballsGap(t)
	if gap < 150*time.Millisecond || gap > 600*time.Millisecond {
		t.Fatalf("second connect %v after the first, want about 250ms", gap)
	}
	if !ready {
		t.Fatal("channel not READY on the second address")
	}
}
