package sim

import (
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/conformlab/conform/harness/trace"
)

// TestChannel_ConnectsAndAnswersAnRPC verifies the happy path: one endpoint,
// READY after two RTTs, an RPC answered by the backend owning the address.
func TestChannel_ConnectsAndAnswersAnRPC(t *testing.T) {
	w, err := New(testLBName, `{}`, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddBackend("b0", "198.18.0.10:443")
	if err := w.ResolveEndpoints([]string{"198.18.0.10:443"}); err != nil {
		t.Fatal(err)
	}
	w.StartRPC("r1", RPCOptions{})
	w.Advance(time.Second)
	if w.State() != connectivity.Ready {
		t.Fatalf("State = %v, want READY", w.State())
	}
	ev := w.Events()
	last := ev[len(ev)-1]
	if last.Kind != trace.KindRPCResult || last.Code != "OK" || last.Backend != "b0" || last.T != 3*time.Millisecond {
		t.Fatalf("last event = %+v, want rpc-result OK from b0 at 3ms (READY at 2 RTT, answer 1 RTT later)", last)
	}
}
