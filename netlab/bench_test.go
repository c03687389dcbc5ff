package netlab

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkLabStartClose measures building a lab of N dual-stack backends,
// and closing it. Goals: 64 in ≤ 150 ms and closed in ≤ 50 ms; 256 in
// ≤ 600 ms.
//
// start-ms/op is the wall time of Start, from the call until it returns:
// every namespace created and plugged into the switch, every link up at both
// ends, every IPv6 address usable, every neighbour entry in place and every
// backend listening on each of its addresses (a connection from the client
// can be made at once: TestLab_FirstConnectionAfterStart). close-ms/op is
// the wall time of Close.
//
// Each Start is measured cold: between iterations, with the timer stopped,
// the benchmark waits until the kernel has finished tearing down the
// previous lab's namespaces (see waitNetnsCleanup). The kernel does that
// asynchronously after Close, on a work queue that takes the rtnl lock for
// every device it removes; left running, it competes with the next Start
// for the lock and the CPU (64 backends: ~40 ms more per Start).
func BenchmarkLabStartClose(b *testing.B) {
	requireRoot(b)
	cleanup := newNetnsCleanupWaiter(b)
	for _, n := range []int{8, 64, 256} {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			cfg := Config{Backends: make([]BackendConfig, n)}
			for i := range cfg.Backends {
				cfg.Backends[i] = BackendConfig{Name: fmt.Sprintf("b%d", i)}
			}
			var start, close time.Duration
			cleanup.wait(b)
			for b.Loop() {
				t0 := time.Now()
				l, err := Start(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				l.Close()
				start += t1.Sub(t0)
				close += time.Since(t1)
				b.StopTimer()
				cleanup.wait(b)
				b.StartTimer()
			}
			b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "start-ms/op")
			b.ReportMetric(float64(close.Milliseconds())/float64(b.N), "close-ms/op")
		})
	}
}

// BenchmarkFaultSetClear measures how long SetFault takes to put a fault in
// force and to clear it. Goal ≤ 2 ms.
func BenchmarkFaultSetClear(b *testing.B) {
	l := startLab(b, Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2"}}})
	ap, _ := l.Addr("b1", IPv6)
	for _, f := range []Fault{FaultDrop, FaultReset, FaultStall, FaultDown, FaultFailRPCs} {
		b.Run(f.String(), func(b *testing.B) {
			for b.Loop() {
				if err := l.SetFault(ap, f); err != nil {
					b.Fatal(err)
				}
				if err := l.SetFault(ap, FaultNone); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGRPCGoHappyEyeballsGap measures, over 30 labs, the gap between the
// IPv6 SYN a default grpc-go channel sends to a dropping address and its
// IPv4 SYN (A61's Connection Attempt Delay is 250 ms).
func BenchmarkGRPCGoHappyEyeballsGap(b *testing.B) {
	requireRoot(b)
	for b.Loop() {
		var gaps []time.Duration
		for range 30 {
			gaps = append(gaps, heGap(b))
		}
		slices.Sort(gaps)
		b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(gaps[len(gaps)*99/100].Microseconds())/1000, "p99-ms")
	}
}
