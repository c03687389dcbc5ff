package netlab

import (
	"context"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLab_FirstConnectionAfterStart verifies that a lab is ready when Start
// returns: the very first connection to each family of a backend is
// established at once, not lost to a link or an IPv6 address still coming up
// (which costs the 1 s SYN retransmission). Repeated, since the race it
// guards against was lost in about one start out of three.
//
// "At once" is judged by the kernel's count of the connection's
// retransmissions (a lost SYN is one), not by a deadline shorter than the
// retransmission: a loaded machine can hold a good dial past any such
// deadline.
func TestLab_FirstConnectionAfterStart(t *testing.T) {
	for i := range 50 {
		l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}}})
		for _, ap := range l.Backend("b1").Addrs() {
			ctx, cancel := context.WithTimeout(context.Background(), probeGuard)
			c, err := l.DialContext(ctx, "tcp", ap.String())
			cancel()
			if err != nil {
				t.Fatalf("start %d: first connection to %s: %v", i, ap, err)
			}
			n := retransmissions(t, c)
			c.Close()
			if n > 0 {
				t.Fatalf("start %d: first connection to %s: %d retransmission(s), want established at once (its SYN not lost)", i, ap, n)
			}
			if got := probe(t, l, ap, outEstablished); got != outEstablished {
				t.Fatalf("start %d: %s: %s, want %s", i, ap, got, outEstablished)
			}
		}
		l.Close()
	}
}

// retransmissions is the kernel's count of c's retransmitted segments
// (TCP_INFO tcpi_total_retrans), its SYN's included.
func retransmissions(t *testing.T, c net.Conn) uint32 {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) { info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatalf("TCP_INFO: %v", gerr)
	}
	return info.Total_retrans
}
