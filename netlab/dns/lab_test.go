package dns

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/netlab"
	"github.com/vishvananda/netlink"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	runtime.LockOSThread() // DESIGN.md: the main goroutine stays on the main thread
	os.Exit(m.Run())
}

// startLab starts a one-backend lab with the DNS service in client0.
func startLab(t *testing.T, opts ...Option) (*netlab.Lab, *Server) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netlab/dns lab test: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := netlab.Start(ctx, netlab.Config{Backends: []netlab.BackendConfig{{Name: "b1"}}})
	if err != nil {
		t.Fatalf("netlab.Start: %v", err)
	}
	t.Cleanup(func() { lab.Close() })
	s := New(append([]Option{WithClock(lab.Now)}, opts...)...)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	aps, err := s.ListenIn(lab, "client0")
	if err != nil {
		t.Fatal(err)
	}
	if len(aps) != 2 || aps[0] != netip.AddrPortFrom(ServiceAddrV4, 53) || aps[1] != netip.AddrPortFrom(ServiceAddrV6, 53) {
		t.Fatalf("ListenIn served %v", aps)
	}
	return lab, s
}

// exchange sends req to server from inside client0, over UDP or TCP.
func exchange(t *testing.T, lab *netlab.Lab, s *Server, network string, server netip.AddrPort, req []byte) *dnsmessage.Message {
	t.Helper()
	var c net.Conn
	err := lab.Do("client0", func() error {
		var err error
		if network == "udp" {
			c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(server))
		} else {
			c, err = net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(server))
		}
		return err
	})
	if err != nil {
		t.Fatalf("dialing %s %s in client0: %v", network, server, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	out := req
	if network == "tcp" {
		out = binary.BigEndian.AppendUint16(nil, uint16(len(req)))
		out = append(out, req...)
	}
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65535)
	var n int
	if network == "udp" {
		n, err = c.Read(buf)
	} else {
		var l [2]byte
		if _, err = io.ReadFull(c, l[:]); err == nil {
			n = int(binary.BigEndian.Uint16(l[:]))
			_, err = io.ReadFull(c, buf[:n])
		}
	}
	if err != nil {
		t.Fatalf("%s %s: reading the answer to % x: %v (queries seen: %v)", network, server, req, err, s.Queries())
	}
	var m dnsmessage.Message
	if err := m.Unpack(buf[:n]); err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestLab_UDPAndTCP_BothFamilies: inside client0 the service answers on UDP
// and TCP at both service addresses, and reports each query with the
// client's address, on the lab's clock; nothing listens outside the lab.
func TestLab_UDPAndTCP_BothFamilies(t *testing.T) {
	lab, s := startLab(t)
	b1v4, _ := lab.Addr("b1", netlab.IPv4)
	b1v6, _ := lab.Addr("b1", netlab.IPv6)
	must(t, s.Set("svc.conform", []netip.Addr{b1v6.Addr(), b1v4.Addr()}, time.Second))
	before := lab.Now()
	i := uint16(0)
	for _, server := range []netip.Addr{ServiceAddrV4, ServiceAddrV6} {
		for _, network := range []string{"udp", "tcp"} {
			for _, typ := range []Type{TypeA, TypeAAAA} {
				i++
				m := exchange(t, lab, s, network, netip.AddrPortFrom(server, Port), query(t, i, "svc.conform", typ))
				want := b1v4.Addr()
				if typ == TypeAAAA {
					want = b1v6.Addr()
				}
				if m.ID != i || RCode(m.RCode) != RCodeSuccess || !slices.Equal(answerAddrs(m), []netip.Addr{want}) {
					t.Errorf("%s %s %s: %+v, want %s", server, network, typ, m, want)
				}
			}
		}
	}
	qs := s.Queries()
	if len(qs) != 8 {
		t.Fatalf("%d queries reported, want 8: %v", len(qs), qs)
	}
	for _, q := range qs {
		if !netlab.InLab(q.From.Addr()) || q.T < before || q.T > lab.Now() || q.Name != "svc.conform" {
			t.Errorf("query %v: want from a lab address, on the lab's clock, for svc.conform", q)
		}
	}
	// Nothing in the root namespace: the service addresses are not there
	// (checked by reading its addresses; no packet leaves the lab).
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, _ := netip.AddrFromSlice(a.IP); ip.Unmap() == ServiceAddrV4 || ip == ServiceAddrV6 {
			t.Errorf("the root namespace has the service address %s", ip)
		}
	}
}

// TestLab_Close_StopsServing: after Close nothing answers, and Close returns
// only when every serving goroutine has.
func TestLab_Close_StopsServing(t *testing.T) {
	lab, s := startLab(t)
	must(t, s.Close())
	err := lab.Do("client0", func() error {
		_, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(netip.AddrPortFrom(ServiceAddrV4, Port)))
		return err
	})
	if err == nil {
		t.Error("a TCP connection to the service succeeded after Close")
	}
	if _, err := s.ListenIn(lab, "client1"); err == nil {
		t.Error("ListenIn on a closed server succeeded")
	}
}

// TestLab_WithLabResolver_ChildResolvesThroughLabDNS: a child given the
// lab's resolver files resolves a scenario name through the lab DNS with the
// system resolver (getent), sees a hosts line of "files dns", and finds the
// resolver daemons' directories empty, while the machine's files and mount
// table stay as they were.
func TestLab_WithLabResolver_ChildResolvesThroughLabDNS(t *testing.T) {
	lab, s := startLab(t)
	for _, p := range []string{Unshare, "/usr/bin/getent"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs %s: %v", p, err)
		}
	}
	before := resolverState(t)
	b1v4, _ := lab.Addr("b1", netlab.IPv4)
	must(t, s.Set("svc.conform", []netip.Addr{b1v4.Addr()}, time.Second))
	dir := t.TempDir()
	must(t, WriteResolverFiles(dir))
	var stdout, stderr bytes.Buffer
	script := `getent ahostsv4 svc.conform; echo ---; grep '^hosts:' /etc/nsswitch.conf; echo ---; ls -A /run/nscd /var/run/nscd /run/systemd/resolve 2>/dev/null; true`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	w, err := WithLabResolver(cmd, dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := lab.StartProcess("client0", w)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("child: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	parts := strings.Split(stdout.String(), "---\n")
	if len(parts) != 3 || !strings.Contains(parts[0], b1v4.Addr().String()) {
		t.Fatalf("child printed %q, want getent's answer %s, the hosts line, the daemons' directories", stdout.String(), b1v4.Addr())
	}
	if _, err := os.Stat("/etc/nsswitch.conf"); err == nil && strings.TrimSpace(parts[1]) != "hosts: files dns" {
		t.Errorf("the child's hosts line is %q, want hosts: files dns", parts[1])
	}
	for _, l := range strings.Fields(parts[2]) {
		if !strings.HasSuffix(l, ":") { // ls prints a "dir:" header per directory, then its entries
			t.Errorf("the child sees %q in a resolver daemon's directory, want them empty", l)
		}
	}
	found := false
	for _, q := range s.Queries() {
		found = found || (q.Name == "svc.conform" && q.Type == TypeA)
	}
	if !found {
		t.Errorf("the lab DNS saw no A query for svc.conform: %v", s.Queries())
	}
	if after := resolverState(t); after != before {
		t.Errorf("the machine's resolver files or mounts changed:\nbefore %s\nafter  %s", before, after)
	}
}

// resolverState is what the machine's resolver depends on: the contents of
// resolv.conf and nsswitch.conf (through any link) and the mounts on them
// and on the daemons' directories.
func resolverState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	paths := append([]string{systemResolvConf, systemNSSwitch}, resolverDaemonDirs...)
	for i, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			paths[i] = real
		}
		if data, err := os.ReadFile(paths[i]); err == nil {
			fmt.Fprintf(&b, "%s: %x; ", paths[i], sha256.Sum256(data))
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && slices.Contains(paths, f[4]) {
			fmt.Fprintf(&b, "mount %s; ", f[4])
		}
	}
	return b.String()
}

// TestLabNSSwitch: the hosts line becomes "files dns"; the other databases
// stay; a file without one gets it.
func TestLabNSSwitch(t *testing.T) {
	got := string(labNSSwitch([]byte("passwd: files systemd\nhosts:  files mdns4_minimal [NOTFOUND=return] resolve dns myhostname\nnetworks: files\n")))
	want := "passwd: files systemd\nhosts: files dns\nnetworks: files\n"
	if got != want {
		t.Errorf("labNSSwitch = %q, want %q", got, want)
	}
	if got := string(labNSSwitch([]byte("passwd: files\n"))); got != "passwd: files\nhosts: files dns\n" {
		t.Errorf("without a hosts line: %q", got)
	}
}

// Lookup, dialing in client0, gets a name's A then AAAA records from the lab
// DNS; a name without records is an error.
func TestLab_Lookup_IPv4ThenIPv6(t *testing.T) {
	lab, s := startLab(t)
	v6, v4 := netip.MustParseAddr("fd00:c0f::b:2"), netip.MustParseAddr("198.19.0.1")
	if err := s.Set("svc.conform", []netip.Addr{v6, v4}, time.Second); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := Lookup(ctx, lab.DialContext, "svc.conform")
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if len(got) != 2 || got[0] != v4 || got[1] != v6 {
		t.Fatalf("Lookup = %v, want [%s %s]", got, v4, v6)
	}
	if _, err := Lookup(ctx, lab.DialContext, "none.conform"); err == nil {
		t.Fatal("Lookup of a name without records: no error")
	}
}
