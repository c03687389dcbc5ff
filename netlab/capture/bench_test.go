package capture

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkSYNTimestampMinusConnect measures how far the kernel's stamp on
// an outgoing SYN lies after time.Now() read just before connect(2). It
// reports the p50 and p99 over b.N dials (goal: p99 ≤ 1 ms).
func BenchmarkSYNTimestampMinusConnect(b *testing.B) {
	l := newTestLab(b)
	syns := make(chan Packet, 1)
	c, err := Open(l.client, clientIf, OnPacket(func(p Packet) {
		if p.Kind == SYN {
			select { // never block the reader, so Close cannot hang
			case syns <- p:
			default:
			}
		}
	}))
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { c.Close() })
	dst := netip.AddrPortFrom(serverIP4, closedPort) // answered by RST: no TIME_WAIT
	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		lags = append(lags, synLag(b, l, dst, syns))
	}
	b.StopTimer()
	reportPercentiles(b, lags)
}

// synLag dials dst once and returns the SYN's kernel stamp minus the time
// read just before connect.
func synLag(b *testing.B, l *testLab, dst netip.AddrPort, syns <-chan Packet) time.Duration {
	b.StopTimer()
	fd := socketIn(b, l.client, dst)
	defer unix.Close(fd)
	b.StartTimer()
	before := time.Now()
	if err := connect(fd, dst); err != nil {
		b.Fatalf("connect: %v", err)
	}
	p := <-syns
	if p.Dst != dst {
		b.Fatalf("SYN to %v, want %v", p.Dst, dst)
	}
	return p.Kernel.Sub(before)
}

func reportPercentiles(b *testing.B, lags []time.Duration) {
	slices.Sort(lags)
	pct := func(q float64) float64 {
		return float64(lags[int(q*float64(len(lags)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(pct(1), "max-µs")
}
