package capture

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The test topology: a client and a server namespace joined by one veth.
const (
	clientIf   = "c0"
	serverIf   = "s0"
	closedPort = 7   // nothing listens on it
	vethIndex  = 100 // the client end's ifindex, unlike its peer's
)

var (
	clientIP4 = netip.MustParseAddr("198.18.0.1")
	serverIP4 = netip.MustParseAddr("198.18.0.2")
	holeIP4   = netip.MustParseAddr("198.18.0.99") // neighbour: a MAC nobody has
	clientIP6 = netip.MustParseAddr("fd00:c0f::1")
	serverIP6 = netip.MustParseAddr("fd00:c0f::2")
	holeIP6   = netip.MustParseAddr("fd00:c0f::99")
	holeMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x99}
)

// testLab is a throwaway two-namespace topology; t.Cleanup removes it.
type testLab struct {
	client, server netns.NsHandle
	listen4        netip.AddrPort // a listener in the server namespace
	listen6        netip.AddrPort
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("capture: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
}

// newTestLab builds the topology; nothing is created in the root namespace.
func newTestLab(t testing.TB) *testLab {
	t.Helper()
	needRoot(t)
	l := &testLab{client: newNamespace(t), server: newNamespace(t)}
	l.addVeth(t)
	clientLinks, serverLinks := watchLinks(t, l.client), watchLinks(t, l.server)
	setupSide(t, l.client, clientIf, clientIP4, clientIP6)
	setupSide(t, l.server, serverIf, serverIP4, serverIP6)
	clientLinks.waitOperUp(t, clientIf)
	serverLinks.waitOperUp(t, serverIf)
	l.addNeighbourTables(t)
	l.listen4 = listen(t, l.server, serverIP4)
	l.listen6 = listen(t, l.server, serverIP6)
	return l
}

// newNamespace creates an unnamed namespace from a throwaway locked thread;
// it vanishes when the handle is closed.
func newNamespace(t testing.TB) netns.NsHandle {
	t.Helper()
	var ns netns.NsHandle
	err := onLockedThread(func() error {
		orig, err := netns.Get()
		if err != nil {
			return err
		}
		defer orig.Close()
		ns, err = netns.New() // moves this thread into ns
		if err != nil {
			return err
		}
		return netns.Set(orig)
	})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// onLockedThread runs fn on a locked thread, releasing the thread only if
// fn succeeds (a failed fn may have left it in another namespace).
func onLockedThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := fn()
		if err == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// addVeth creates the veth in the client namespace with its peer placed
// straight into the server namespace. Its index is set apart from the
// peer's: in two fresh namespaces both ends would otherwise get index 2, and
// the kernel then treats the carrier change as non-urgent and attaches the
// qdisc (until when the veth drops everything) only after about a second.
func (l *testLab) addVeth(t testing.TB) {
	t.Helper()
	h := handleAt(t, l.client)
	defer h.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: clientIf, Index: vethIndex},
		PeerName:      serverIf,
		PeerNamespace: netlink.NsFd(int(l.server)),
	}
	if err := h.LinkAdd(veth); err != nil {
		t.Fatalf("adding veth: %v", err)
	}
}

func handleAt(t testing.TB, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	return h
}

// setupSide addresses ifname (IPv6 without DAD) and brings it and lo up.
func setupSide(t testing.TB, ns netns.NsHandle, ifname string, ip4, ip6 netip.Addr) {
	t.Helper()
	h := handleAt(t, ns)
	defer h.Close()
	link := linkByName(t, h, ifname)
	addrs := []*netlink.Addr{
		{IPNet: prefixNet(ip4, 24)},
		{IPNet: prefixNet(ip6, 64), Flags: unix.IFA_F_NODAD},
	}
	for _, a := range addrs {
		if err := h.AddrAdd(link, a); err != nil {
			t.Fatalf("adding %v to %s: %v", a.IPNet, ifname, err)
		}
	}
	for _, up := range []netlink.Link{link, linkByName(t, h, "lo")} {
		if err := h.LinkSetUp(up); err != nil {
			t.Fatalf("bringing %s up: %v", up.Attrs().Name, err)
		}
	}
}

func linkByName(t testing.TB, h *netlink.Handle, name string) netlink.Link {
	t.Helper()
	link, err := h.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	return link
}

func prefixNet(ip netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(bits, ip.BitLen())}
}

// linkWatch receives link notifications from one namespace.
type linkWatch struct {
	updates chan netlink.LinkUpdate
	done    chan struct{}
}

// watchLinks subscribes to link notifications in ns; t.Cleanup stops the
// subscription and waits for its reader to end.
func watchLinks(t testing.TB, ns netns.NsHandle) *linkWatch {
	t.Helper()
	w := &linkWatch{updates: make(chan netlink.LinkUpdate, 16), done: make(chan struct{})}
	err := netlink.LinkSubscribeWithOptions(w.updates, w.done, netlink.LinkSubscribeOptions{Namespace: &ns})
	if err != nil {
		t.Fatalf("subscribing to links: %v", err)
	}
	t.Cleanup(func() {
		close(w.done)
		for range w.updates { // closed when the subscription's reader returns
		}
	})
	return w
}

// waitOperUp waits for the kernel to announce ifname operationally up. A
// veth drops what it is given until then (its qdisc is attached when the
// carrier comes on, asynchronously), so the first SYN could be lost. The
// announcement is sent after the qdisc is attached; polling the state is not
// enough, as the state changes just before.
func (w *linkWatch) waitOperUp(t testing.TB, ifname string) {
	t.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for {
		select {
		case u := <-w.updates:
			if u.Link.Attrs().Name == ifname && u.Link.Attrs().OperState == netlink.OperUp {
				return
			}
		case <-guard.C:
			t.Fatalf("%s never came up", ifname)
		}
	}
}

// addNeighbours adds permanent neighbour entries on ifname in ns.
func addNeighbours(t testing.TB, ns netns.NsHandle, ifname string, macs map[netip.Addr]net.HardwareAddr) {
	t.Helper()
	h := handleAt(t, ns)
	defer h.Close()
	link := linkByName(t, h, ifname)
	for ip, mac := range macs {
		family := unix.AF_INET
		if ip.Is6() {
			family = unix.AF_INET6
		}
		n := &netlink.Neigh{
			LinkIndex:    link.Attrs().Index,
			Family:       family,
			State:        netlink.NUD_PERMANENT,
			IP:           ip.AsSlice(),
			HardwareAddr: mac,
		}
		if err := h.NeighAdd(n); err != nil {
			t.Fatalf("neighbour %v: %v", ip, err)
		}
	}
}

// addNeighbourTables makes neighbour resolution never delay a SYN: each side
// knows the other's MAC, and the hole addresses get a MAC nobody has, so
// SYNs to them leave the client and are never answered.
func (l *testLab) addNeighbourTables(t testing.TB) {
	t.Helper()
	clientMAC, serverMAC := macOf(t, l.client, clientIf), macOf(t, l.server, serverIf)
	addNeighbours(t, l.client, clientIf, map[netip.Addr]net.HardwareAddr{
		serverIP4: serverMAC, serverIP6: serverMAC, holeIP4: holeMAC, holeIP6: holeMAC,
	})
	addNeighbours(t, l.server, serverIf, map[netip.Addr]net.HardwareAddr{
		clientIP4: clientMAC, clientIP6: clientMAC,
	})
}

func macOf(t testing.TB, ns netns.NsHandle, ifname string) net.HardwareAddr {
	t.Helper()
	h := handleAt(t, ns)
	defer h.Close()
	return linkByName(t, h, ifname).Attrs().HardwareAddr
}

// listen opens a TCP listener on ip inside ns; the kernel completes
// handshakes without Accept. t.Cleanup closes it.
func listen(t testing.TB, ns netns.NsHandle, ip netip.Addr) netip.AddrPort {
	t.Helper()
	var ln net.Listener
	err := inNamespace(ns, func() error {
		var err error
		ln, err = net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		return err
	})
	if err != nil {
		t.Fatalf("listening on %v: %v", ip, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// socketIn opens a non-blocking TCP socket inside ns for dialing dst.
func socketIn(t testing.TB, ns netns.NsHandle, dst netip.AddrPort) int {
	t.Helper()
	family := unix.AF_INET
	if dst.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd := -1
	err := inNamespace(ns, func() error {
		var err error
		fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	return fd
}

// connect starts a non-blocking connect; the SYN is sent before it returns.
func connect(fd int, dst netip.AddrPort) error {
	var sa unix.Sockaddr
	if dst.Addr().Is4() {
		sa = &unix.SockaddrInet4{Addr: dst.Addr().As4(), Port: int(dst.Port())}
	} else {
		sa = &unix.SockaddrInet6{Addr: dst.Addr().As16(), Port: int(dst.Port())}
	}
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		return err
	}
	return nil
}

// dial connects a new socket in the client namespace to dst and returns the
// client's address as the SYN carries it. t.Cleanup closes the socket.
func (l *testLab) dial(t testing.TB, dst netip.AddrPort) netip.AddrPort {
	t.Helper()
	fd := socketIn(t, l.client, dst)
	t.Cleanup(func() { unix.Close(fd) })
	if err := connect(fd, dst); err != nil {
		t.Fatalf("connect to %v: %v", dst, err)
	}
	return localAddr(t, fd)
}

func localAddr(t testing.TB, fd int) netip.AddrPort {
	t.Helper()
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	t.Fatalf("getsockname: unexpected %T", sa)
	return netip.AddrPort{}
}

// packetLog collects packets from OnPacket and lets a test wait for them.
type packetLog struct {
	mu     sync.Mutex
	pkts   []Packet
	notify chan struct{}
}

func newPacketLog() *packetLog { return &packetLog{notify: make(chan struct{}, 1)} }

func (l *packetLog) add(p Packet) {
	l.mu.Lock()
	l.pkts = append(l.pkts, p)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

func (l *packetLog) snapshot() []Packet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Packet(nil), l.pkts...)
}

// waitFor returns the log once cond holds for it; it fails the test if that
// takes longer than a generous bound (a hang guard, not a timing check).
func (l *packetLog) waitFor(t testing.TB, what string, cond func([]Packet) bool) []Packet {
	t.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for {
		if ps := l.snapshot(); cond(ps) {
			return ps
		}
		select {
		case <-l.notify:
		case <-guard.C:
			t.Fatalf("gave up waiting for %s; packets:\n%s", what, formatPackets(l.snapshot()))
		}
	}
}

func count(ps []Packet, match func(Packet) bool) int {
	n := 0
	for _, p := range ps {
		if match(p) {
			n++
		}
	}
	return n
}

func formatPackets(ps []Packet) string {
	s := ""
	for _, p := range ps {
		s += fmt.Sprintf("  %s %-7v %v > %v seq=%d retransmit=%v\n",
			p.Kernel.Format("15:04:05.000000"), p.Kind, p.Src, p.Dst, p.Seq, p.Retransmit)
	}
	return s
}

// openCapture opens a capture on ifname in ns with a packet log; t.Cleanup
// closes it.
func openCapture(t testing.TB, ns netns.NsHandle, ifname string, opts ...Option) (*Capture, *packetLog) {
	t.Helper()
	log := newPacketLog()
	c, err := Open(ns, ifname, append(opts, OnPacket(log.add))...)
	if err != nil {
		t.Fatalf("Open(%s): %v", ifname, err)
	}
	t.Cleanup(func() { c.Close() })
	return c, log
}
