package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The service addresses: where the server listens inside a lab host, on the
// host's loopback. They are outside the lab's address plan for clients
// (198.18.0.1-250, fd00:c0f::c:N) and backends (198.19.x.y, fd00:c0f::b:N), so
// they never collide with a host (198.18.0.53 would be client 52's).
var (
	ServiceAddrV4 = netip.MustParseAddr("198.18.255.53")
	ServiceAddrV6 = netip.MustParseAddr("fd00:c0f::d:53")
)

// Port is the DNS port.
const Port = 53

// Namespaces runs a function inside a lab host's network namespace;
// *netlab.Lab is one (Lab.Do).
type Namespaces interface {
	Do(host string, f func() error) error
}

// ListenIn serves the table inside host's namespace (usually "client0"):
// it adds the service addresses to the namespace's loopback (they vanish with
// the namespace) and answers on UDP and TCP port 53 of both. Call it once per
// host that needs the service; every host shares the one table. It returns
// the addresses served.
func (s *Server) ListenIn(ns Namespaces, host string) ([]netip.AddrPort, error) {
	var pcs []net.PacketConn
	var lns []net.Listener
	aps := []netip.AddrPort{netip.AddrPortFrom(ServiceAddrV4, Port), netip.AddrPortFrom(ServiceAddrV6, Port)}
	err := ns.Do(host, func() error {
		if err := addServiceAddrs(); err != nil {
			return err
		}
		// Sockets keep the namespace they were opened in (IP literals: no
		// resolution, no other goroutine).
		for _, ap := range aps {
			pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
			if err != nil {
				return err
			}
			pcs = append(pcs, pc)
			ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(ap))
			if err != nil {
				return err
			}
			lns = append(lns, ln)
		}
		return nil
	})
	if err != nil {
		for _, pc := range pcs {
			pc.Close()
		}
		for _, ln := range lns {
			ln.Close()
		}
		return nil, fmt.Errorf("dns: listening in %s: %w", host, err)
	}
	for _, pc := range pcs {
		err = errors.Join(err, s.ServePacket(pc))
	}
	for _, ln := range lns {
		err = errors.Join(err, s.ServeListener(ln))
	}
	if err != nil {
		return nil, err
	}
	return aps, nil
}

// addServiceAddrs adds the service addresses to lo, in the calling thread's
// namespace, after checking that it is a lab namespace: one whose links carry
// a lab address and nothing else routable (the root namespace never does).
func addServiceAddrs() error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE) // the thread's namespace, not the package's root handle
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	if err := checkLabNamespace(h); err != nil {
		return fmt.Errorf("refusing to add the DNS service addresses: %w", err)
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	for _, a := range []netip.Addr{ServiceAddrV4, ServiceAddrV6} {
		ipnet := &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
		// No duplicate address detection: with it, binding IPv6 fails for ~1.8 s (DESIGN.md).
		if err := h.AddrAdd(lo, &netlink.Addr{IPNet: ipnet, Flags: unix.IFA_F_NODAD}); err != nil {
			return fmt.Errorf("adding %s to lo: %w", a, err)
		}
	}
	// The kernel installs an IPv6 address's local route from a work queue,
	// after AddrAdd returns (even with IFA_F_NODAD): until then packets to
	// it leave by eth0 and are lost, while binding already works. Measured:
	// about half of the queries sent right away got no answer.
	return waitLocalRoute(ServiceAddrV6, routeWait)
}

// routeWait bounds how long ListenIn waits for the local route.
const routeWait = 5 * time.Second

// waitLocalRoute waits until the calling thread's namespace has a local
// route for a (a route update, or already in the initial dump).
func waitLocalRoute(a netip.Addr, timeout time.Duration) error {
	ns, err := netns.Get()
	if err != nil {
		return fmt.Errorf("reading the thread's namespace: %w", err)
	}
	defer ns.Close()
	updates := make(chan netlink.RouteUpdate, 64)
	done := make(chan struct{})
	defer close(done)
	if err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{Namespace: &ns, ListExisting: true}); err != nil {
		return fmt.Errorf("watching routes: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case u, ok := <-updates:
			if !ok {
				return fmt.Errorf("watching routes for %s: subscription ended", a)
			}
			if u.Type != unix.RTM_NEWROUTE || u.Route.Type != unix.RTN_LOCAL || u.Dst == nil {
				continue
			}
			if d, ok := netip.AddrFromSlice(u.Dst.IP); ok && d.Unmap() == a {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("no local route for %s within %v", a, timeout)
		}
	}
}

// checkLabNamespace fails unless h's namespace carries a lab address and no
// other routable one: the root namespace never passes.
func checkLabNamespace(h *netlink.Handle) error {
	addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("listing addresses: %w", err)
	}
	lab := false
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP)
		ip = ip.Unmap()
		switch {
		case ip.IsLoopback() || ip.IsLinkLocalUnicast():
		case inLab(ip):
			lab = true
		default:
			return fmt.Errorf("not a lab namespace (it has %s)", ip)
		}
	}
	if !lab {
		return errors.New("not a lab namespace (no lab address)")
	}
	return nil
}

// The lab's prefixes (netlab.PrefixV4, and the /48 DESIGN.md reserves).
var (
	labV4 = netip.MustParsePrefix("198.18.0.0/15")
	labV6 = netip.MustParsePrefix("fd00:c0f::/48")
)

func inLab(a netip.Addr) bool { return labV4.Contains(a) || labV6.Contains(a) }

// Target is a gRPC target naming name:port through the lab DNS with an
// authority (gRPC's naming doc: dns://[authority]/host[:port]), so a client
// needs no resolv.conf: "dns://198.18.255.53:53/svc.conform:50051". C-core's
// c-ares resolver wants the authority's port spelled out.
func Target(name string, port int) string {
	return "dns://" + netip.AddrPortFrom(ServiceAddrV4, Port).String() + "/" + net.JoinHostPort(name, strconv.Itoa(port))
}

// ResolvConf is a resolv.conf naming only the lab DNS, for a client that
// reads one (see WithResolvConf). One attempt, one-second timeout: a lost
// query shows as such instead of being hidden by retries.
func ResolvConf() []byte {
	return []byte("# conform lab DNS (netlab/dns)\n" +
		"nameserver " + ServiceAddrV4.String() + "\n" +
		"nameserver " + ServiceAddrV6.String() + "\n" +
		"options timeout:1 attempts:1\n")
}

// Unshare is util-linux's unshare(1), which WithResolvConf uses.
const Unshare = "/usr/bin/unshare"

// WithResolvConf returns a command that runs cmd with path bind-mounted over
// /etc/resolv.conf in a mount namespace of its own (private propagation), so
// the child and everything it starts read the lab's resolv.conf while the
// machine's file and every other process are untouched. It needs root and
// unshare(1); cmd's Env, Dir, Stdin, Stdout, Stderr and SysProcAttr carry over.
func WithResolvConf(cmd *exec.Cmd, path string) (*exec.Cmd, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("dns: resolv.conf: %w", err)
	}
	if _, err := os.Stat(Unshare); err != nil {
		return nil, fmt.Errorf("dns: %s is needed to give a child its own resolv.conf (apt-get install -y util-linux): %w", Unshare, err)
	}
	// unshare --mount makes the new namespace's mounts private before the
	// shell runs, so the bind mount cannot propagate back.
	args := append([]string{Unshare, "--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, abs, cmd.Path}, cmd.Args[1:]...)
	w := &exec.Cmd{Path: Unshare, Args: args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
		Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr}
	return w, nil
}
