package compare

import (
	"fmt"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	_ "github.com/conformlab/conform/reference/roundrobin"
)

// roundRobinRun is conform_round_robin over 8 backends serving n RPCs.
func roundRobinRun(b *testing.B, n int) []trace.Event {
	w, err := sim.New("conform_round_robin", "", sim.Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var eps [][]string
	for i := range 8 {
		addr := fmt.Sprintf("198.18.0.%d:443", 10+i)
		w.AddBackend(fmt.Sprint("b", i), addr)
		eps = append(eps, []string{addr})
	}
	if err := w.ResolveEndpoints(eps...); err != nil {
		b.Fatal(err)
	}
	w.Advance(time.Second)
	for i := range n {
		w.StartRPC(fmt.Sprint("r", i), sim.RPCOptions{})
		w.Advance(time.Millisecond)
	}
	return w.Events()
}

// BenchmarkEvents_RoundRobin10kRPCs compares two equal traces of 10 000
// RPCs (about 30 000 events in 10 000 lanes) and reports events per second.
func BenchmarkEvents_RoundRobin10kRPCs(b *testing.B) {
	golden, observed := roundRobinRun(b, 10000), roundRobinRun(b, 10000)
	b.ResetTimer()
	for b.Loop() {
		if r := Events(golden, observed, Options{}); !r.Equal() {
			b.Fatal(r)
		}
	}
	b.ReportMetric(float64(len(golden))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
