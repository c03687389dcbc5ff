package xdsserver

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/conformlab/conform/netlab"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The service addresses: where the management server listens inside a lab
// host, on the host's loopback. Like netlab/dns's (198.18.255.53,
// fd00:c0f::d:53) they are outside the lab's plan for clients
// (198.18.0.1-250, fd00:c0f::c:N) and backends (198.19.x.y, fd00:c0f::b:N).
var (
	ServiceAddrV4 = netip.MustParseAddr("198.18.255.18")
	ServiceAddrV6 = netip.MustParseAddr("fd00:c0f::d:18")
)

// Port is the management server's port.
const Port = 18000

// Namespaces runs a function inside a lab host's network namespace;
// *netlab.Lab is one (Lab.Do).
type Namespaces interface {
	Do(host string, f func() error) error
}

// ServerURI is the management server's address as an xDS bootstrap's
// server_uri wants it: "198.18.255.18:18000". A client in the host the
// server was started in (usually client0) reaches it there.
func ServerURI() string { return netip.AddrPortFrom(ServiceAddrV4, Port).String() }

// ServerURIV6 is ServerURI on the IPv6 service address: "[fd00:c0f::d:18]:18000".
func ServerURIV6() string { return netip.AddrPortFrom(ServiceAddrV6, Port).String() }

// Bootstrap is a gRPC xDS bootstrap (gRFC A27) naming this server, with
// insecure channel credentials and the given node id: what grpc-go, grpc-js
// and C-core read from GRPC_XDS_BOOTSTRAP_CONFIG (or a file named by
// GRPC_XDS_BOOTSTRAP). The target of a channel using it is "xds:///" plus the
// listener's name.
func Bootstrap(nodeID string) []byte {
	return []byte(`{"xds_servers":[{"server_uri":` + strconv.Quote(ServerURI()) +
		`,"channel_creds":[{"type":"insecure"}],"server_features":["xds_v3"]}],"node":{"id":` +
		strconv.Quote(nodeID) + `}}`)
}

// listenIn adds the service addresses to host's loopback and opens a TCP
// listener on each. The addresses vanish with the namespace; Close removes
// them earlier.
func listenIn(ns Namespaces, host string) ([]net.Listener, error) {
	var lns []net.Listener
	err := ns.Do(host, func() error {
		if err := serviceAddrs(true); err != nil {
			return err
		}
		// A listener keeps the namespace it was opened in (DESIGN.md).
		for _, a := range []netip.Addr{ServiceAddrV4, ServiceAddrV6} {
			ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, Port)))
			if err != nil {
				return err
			}
			lns = append(lns, ln)
		}
		return nil
	})
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		_ = ns.Do(host, func() error { return serviceAddrs(false) })
		return nil, fmt.Errorf("xdsserver: listening in %s: %w", host, err)
	}
	return lns, nil
}

// serviceAddrs adds (or removes) the service addresses on lo, in the calling
// thread's namespace, after checking that it is a lab namespace: one whose
// links carry a lab address and nothing else routable (the root namespace
// never does).
func serviceAddrs(add bool) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE) // the thread's namespace, not the package's root handle
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	if err := checkLabNamespace(h); err != nil {
		return fmt.Errorf("refusing to change the xDS service addresses: %w", err)
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("lo: %w", err)
	}
	for _, a := range []netip.Addr{ServiceAddrV4, ServiceAddrV6} {
		ipnet := &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
		// No duplicate address detection: with it, binding IPv6 fails for ~1.8 s (DESIGN.md).
		addr := &netlink.Addr{IPNet: ipnet, Flags: unix.IFA_F_NODAD}
		if add {
			if err := h.AddrAdd(lo, addr); err != nil {
				return fmt.Errorf("adding %s to lo: %w", a, err)
			}
		} else if err := h.AddrDel(lo, addr); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return fmt.Errorf("removing %s from lo: %w", a, err)
		}
	}
	if !add {
		return nil
	}
	// The kernel installs an IPv6 address's local route from a work queue,
	// after AddrAdd returns: until then packets to it leave by eth0 and are
	// lost (measured for netlab/dns). Wait for the route.
	return waitLocalRoute(ServiceAddrV6, routeWait)
}

// routeWait bounds how long Start waits for the IPv6 local route.
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
		case netlab.InLab(ip):
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
