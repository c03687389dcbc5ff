package sim

import (
	"slices"
	"testing"
	"time"
)

// fifteenMinutes is a 15-virtual-minute run of timers: a failover timer, a
// 15-minute deactivation timer, a 1 s periodic timer, and a subchannel
// reconnecting through backoff to a dropped address.
func fifteenMinutes(b *testing.B) int {
	cfg := `{"reconnect":true,"timers":[{"purpose":"failover","ms":10000},{"purpose":"deactivation","ms":900000},{"purpose":"tick","ms":1000,"every":true}]}`
	w := newChannel(b, cfg, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultDrop)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		b.Fatal(err)
	}
	w.Advance(15 * time.Minute)
	n := len(w.Events())
	w.Close()
	return n
}

// BenchmarkFifteenVirtualMinutes measures the wall time of 15 virtual
// minutes of timers (goal: ≤ 10 ms per op).
func BenchmarkFifteenVirtualMinutes(b *testing.B) {
	events := 0
	for b.Loop() {
		events = fifteenMinutes(b)
	}
	b.ReportMetric(float64(events), "events/op")
}

// BenchmarkThroughput measures simulator throughput in recorded events per
// second of wall time, on the determinism scenario.
func BenchmarkThroughput(b *testing.B) {
	events := 0
	for b.Loop() {
		w := newChannel(b, `{"reconnect":true,"failPicks":true}`, Options{Seed: 1})
		for i, a := range []string{addrA, addrB, addr6} {
			w.AddBackend("b"+string(rune('0'+i)), a)
		}
		w.SetFault(addrA, FaultReset)
		w.SetFault(addrB, FaultStall)
		if err := w.ResolveEndpoints([]string{addrA}, []string{addrB}, []string{addr6}); err != nil {
			b.Fatal(err)
		}
		for i := range 200 {
			w.StartRPC("r", RPCOptions{WaitForReady: i%2 == 0, Deadline: time.Second})
			w.Advance(50 * time.Millisecond)
		}
		w.Advance(30 * time.Minute)
		events += len(w.Events())
		w.Close()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkGRPCPickFirstHappyEyeballsDelay measures, on wall time, the gap
// between grpc-go pick_first's first and second connects when the first
// address drops SYNs (A61: 250 ms). Run with -benchtime=20x.
func BenchmarkGRPCPickFirstHappyEyeballsDelay(b *testing.B) {
	var gaps []time.Duration
	for b.Loop() {
		gap, _ := happyEyeballsGap(b)
		gaps = append(gaps, gap)
	}
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2])/float64(time.Millisecond), "p50-gap-ms")
	b.ReportMetric(float64(gaps[len(gaps)-1])/float64(time.Millisecond), "max-gap-ms")
}
