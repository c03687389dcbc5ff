package capture

import (
	"errors"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

type family struct {
	name       string
	client     netip.Addr
	hole       netip.Addr
	listenPort func(*testLab) netip.AddrPort
	server     netip.Addr
}

var families = []family{
	{"IPv4", clientIP4, holeIP4, func(l *testLab) netip.AddrPort { return l.listen4 }, serverIP4},
	{"IPv6", clientIP6, holeIP6, func(l *testLab) netip.AddrPort { return l.listen6 }, serverIP6},
}

func answered(client netip.AddrPort, kind Kind) func([]Packet) bool {
	return func(ps []Packet) bool {
		return count(ps, func(p Packet) bool { return p.Kind == kind && p.Dst == client }) > 0
	}
}

// TestCapture_ListeningPortOneSYNThenEstablished verifies a dial to a
// listening port is seen as one outgoing SYN from the client then an
// incoming SYN-ACK, making one Established attempt, in both families.
func TestCapture_ListeningPortOneSYNThenEstablished(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			l := newTestLab(t)
			c, log := openCapture(t, l.client, clientIf)
			dst := f.listenPort(l)
			client := l.dial(t, dst)
			ps := log.waitFor(t, "the SYN-ACK", answered(client, SYNACK))
			if len(ps) != 2 || ps[0].Kind != SYN || ps[0].Src != client || ps[0].Dst != dst || ps[0].Retransmit ||
				ps[1].Kind != SYNACK || ps[1].Src != dst || ps[1].Dst != client {
				t.Fatalf("packets, want SYN %v>%v then SYN-ACK back:\n%s", client, dst, formatPackets(ps))
			}
			want := Attempt{Client: client, Server: dst, FirstSYN: ps[0].Kernel, SYNs: 1, Outcome: Established, Answered: ps[1].Kernel}
			if as := c.Attempts(); len(as) != 1 || as[0] != want {
				t.Fatalf("attempts = %+v, want [%+v]", as, want)
			}
			if ps[1].Kernel.Before(ps[0].Kernel) {
				t.Fatalf("SYN-ACK stamped %v before its SYN %v", ps[1].Kernel, ps[0].Kernel)
			}
		})
	}
}

// TestCapture_ServerSideSeesIncomingSYN verifies a capture in the server's
// namespace sees the same attempt from the other side: Src is the client on
// the incoming SYN.
func TestCapture_ServerSideSeesIncomingSYN(t *testing.T) {
	l := newTestLab(t)
	c, log := openCapture(t, l.server, serverIf)
	client := l.dial(t, l.listen6)
	log.waitFor(t, "the SYN-ACK", answered(client, SYNACK))
	as := c.Attempts()
	if len(as) != 1 || as[0].Client != client || as[0].Server != l.listen6 || as[0].Outcome != Established {
		t.Fatalf("attempts = %+v, want one Established %v>%v", as, client, l.listen6)
	}
}

// TestCapture_ClosedPortReset verifies a dial to a port nobody listens on
// ends Reset, stamped with the RST, in both families.
func TestCapture_ClosedPortReset(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			l := newTestLab(t)
			c, log := openCapture(t, l.client, clientIf)
			dst := netip.AddrPortFrom(f.server, closedPort)
			client := l.dial(t, dst)
			ps := log.waitFor(t, "the RST", answered(client, RST))
			as := c.Attempts()
			if len(as) != 1 || as[0].Client != client || as[0].Server != dst || as[0].Outcome != Reset ||
				as[0].SYNs != 1 || !as[0].Answered.Equal(ps[len(ps)-1].Kernel) {
				t.Fatalf("attempts = %+v, want one Reset %v>%v; packets:\n%s", as, client, dst, formatPackets(ps))
			}
		})
	}
}

// TestCapture_BlackholedAddressRetransmitsThenUnanswered verifies SYNs to an
// address whose neighbour is a MAC nobody has are retransmitted, flagged as
// such, and the attempt is Unanswered once the capture is closed.
func TestCapture_BlackholedAddressRetransmitsThenUnanswered(t *testing.T) {
	l := newTestLab(t)
	c, log := openCapture(t, l.client, clientIf)
	dsts := []netip.AddrPort{netip.AddrPortFrom(holeIP4, 443), netip.AddrPortFrom(holeIP6, 443)}
	clients := []netip.AddrPort{l.dial(t, dsts[0]), l.dial(t, dsts[1])}
	log.waitFor(t, "a retransmitted SYN per family", func(ps []Packet) bool {
		return count(ps, func(p Packet) bool { return p.Retransmit && p.Src == clients[0] }) > 0 &&
			count(ps, func(p Packet) bool { return p.Retransmit && p.Src == clients[1] }) > 0
	})
	if as := c.Attempts(); as[0].Outcome != Pending || as[1].Outcome != Pending {
		t.Fatalf("before Close: %+v, want both Pending", as)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	as := c.Attempts()
	for i, a := range as {
		if len(as) != 2 || a.Client != clients[i] || a.Server != dsts[i] || a.SYNs < 2 || a.Outcome != Unanswered || !a.Answered.IsZero() {
			t.Fatalf("attempts = %+v, want two Unanswered with retransmissions to %v", as, dsts)
		}
	}
}

// TestCapture_AnswerDeadlineMakesUnansweredBeforeClose verifies an attempt
// with no answer within the AnswerDeadline is Unanswered while the capture
// still runs, decided by the kernel stamp of the retransmitted SYN.
func TestCapture_AnswerDeadlineMakesUnansweredBeforeClose(t *testing.T) {
	l := newTestLab(t)
	c, log := openCapture(t, l.client, clientIf, AnswerDeadline(1))
	dst := netip.AddrPortFrom(holeIP4, 443)
	client := l.dial(t, dst)
	log.waitFor(t, "a retransmitted SYN", func(ps []Packet) bool {
		return count(ps, func(p Packet) bool { return p.Retransmit && p.Src == client }) > 0
	})
	if as := c.Attempts(); len(as) != 1 || as[0].Outcome != Unanswered || as[0].SYNs < 2 {
		t.Fatalf("attempts = %+v, want one Unanswered with retransmissions", as)
	}
}

// TestCapture_RecordsManyDialsCompletelyAndInOrder verifies every one of a
// known sequence of dials (both families; listening, closed and unreachable
// ports) appears once, in dial order, with the right outcome.
func TestCapture_RecordsManyDialsCompletelyAndInOrder(t *testing.T) {
	const n = 300
	l := newTestLab(t)
	c, log := openCapture(t, l.client, clientIf)
	type dialed struct {
		client, server netip.AddrPort
		want           Outcome
	}
	var ds []dialed
	for i := range n {
		f := families[i%2]
		dst, want := f.listenPort(l), Established
		if i%3 == 1 {
			dst, want = netip.AddrPortFrom(f.server, closedPort), Reset
		}
		ds = append(ds, dialed{l.dial(t, dst), dst, want})
	}
	log.waitFor(t, "an answer to every dial", func(ps []Packet) bool {
		return count(ps, func(p Packet) bool { return p.Kind != SYN }) >= n
	})
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	as := c.Attempts()
	if len(as) != n {
		t.Fatalf("recorded %d attempts, want %d", len(as), n)
	}
	for i, a := range as {
		d := ds[i]
		if a.Client != d.client || a.Server != d.server || a.Outcome != d.want || a.SYNs != 1 {
			t.Fatalf("attempt %d = %+v, want %v>%v %v", i, a, d.client, d.server, d.want)
		}
		if i > 0 && a.FirstSYN.Before(as[i-1].FirstSYN) {
			t.Fatalf("attempt %d stamped %v, before attempt %d at %v", i, a.FirstSYN, i-1, as[i-1].FirstSYN)
		}
	}
}

// TestCapture_CloseStopsReaderAndReleasesEverything verifies Close returns
// while the reader is blocked on an idle socket, is idempotent, and leaves
// no goroutine of the package and no open file once the lab is gone.
func TestCapture_CloseStopsReaderAndReleasesEverything(t *testing.T) {
	needRoot(t)
	fds := openFDs(t)
	t.Run("lab", func(t *testing.T) {
		l := newTestLab(t)
		c, err := Open(l.client, clientIf)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		if !readerRunning() {
			t.Fatalf("no reader goroutine after Open")
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if readerGone() != nil {
			t.Fatalf("reader goroutine still running after Close:\n%s", readerGone())
		}
	})
	if after := openFDs(t); after != fds {
		t.Fatalf("%d open files after the lab was removed, %d before", after, fds)
	}
}

// TestOpen_UnknownInterfaceFails verifies Open reports a missing interface
// and leaves nothing running.
func TestOpen_UnknownInterfaceFails(t *testing.T) {
	l := newTestLab(t)
	if c, err := Open(l.client, "nosuch0"); err == nil {
		c.Close()
		t.Fatalf("Open(nosuch0) succeeded")
	}
	if readerGone() != nil {
		t.Fatalf("reader goroutine running after a failed Open:\n%s", readerGone())
	}
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// Stacks name a goroutine's creator even before it has run.
const createdByPackage = "created by github.com/conformlab/conform/netlab/capture."

// readerRunning reports whether a goroutine started by Open exists.
func readerRunning() bool {
	return strings.Contains(stacks(), createdByPackage+"Open")
}

// readerGone returns nil once no goroutine started by this package (the
// reader, the namespace switcher) exists, or else the stacks. It yields a
// bounded number of times first, so that a goroutine that has signalled its
// end can finish returning.
func readerGone() error {
	for range 1000 {
		if !strings.Contains(stacks(), createdByPackage) {
			return nil
		}
		runtime.Gosched()
	}
	return errors.New(stacks())
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("listing open files: %v", err)
	}
	return len(ents)
}

// withRcvBuf sets the socket's receive buffer (the kernel raises it to its
// minimum, a few frames).
func withRcvBuf(n int) Option { return func(c *config) { c.rcvBuf = n } }

// TestCapture_CloseReportsKernelDrops verifies Close returns ErrDropped when
// frames overflowed the socket's buffer, so an incomplete record is never
// silent (the other tests check Close returns nil when nothing was lost).
func TestCapture_CloseReportsKernelDrops(t *testing.T) {
	l := newTestLab(t)
	release := make(chan struct{})
	c, err := Open(l.client, clientIf, withRcvBuf(1), OnPacket(func(Packet) { <-release }))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	for range 64 { // each connect queues its SYN before returning
		l.dial(t, netip.AddrPortFrom(serverIP4, closedPort))
	}
	unblock()
	if err := c.Close(); !errors.Is(err, ErrDropped) {
		t.Fatalf("Close = %v, want ErrDropped", err)
	}
}

// TestCapture_LoopbackSeesEachSegmentOnce verifies a capture on lo, where
// the kernel shows every frame both leaving and arriving, records a dial to
// the namespace's own address as one SYN and one RST.
func TestCapture_LoopbackSeesEachSegmentOnce(t *testing.T) {
	l := newTestLab(t)
	c, log := openCapture(t, l.client, "lo")
	dst := netip.AddrPortFrom(clientIP4, closedPort) // local: routed over lo
	client := l.dial(t, dst)
	log.waitFor(t, "the RST", answered(client, RST))
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ps := log.snapshot()
	if len(ps) != 2 || ps[0].Kind != SYN || ps[1].Kind != RST {
		t.Fatalf("packets, want one SYN and one RST:\n%s", formatPackets(ps))
	}
}

// TestCapture_CloseRecordsFramesQueuedBeforeIt verifies Close reads every
// frame the kernel queued before it was called: SYNs still waiting behind a
// slow callback become attempts, Unanswered if their answer was not read.
func TestCapture_CloseRecordsFramesQueuedBeforeIt(t *testing.T) {
	const n = 32
	l := newTestLab(t)
	release := make(chan struct{})
	c, err := Open(l.client, clientIf, OnPacket(func(Packet) { <-release }))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	for range n { // each connect queues its SYN before returning
		l.dial(t, netip.AddrPortFrom(holeIP4, 443))
	}
	unblock()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	as := c.Attempts()
	if len(as) != n {
		t.Fatalf("recorded %d attempts, want %d", len(as), n)
	}
	for _, a := range as {
		if a.Outcome != Unanswered {
			t.Fatalf("attempt %+v, want Unanswered", a)
		}
	}
}
