package netlab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Namespaces runs a function inside a lab host's network namespace; *Lab is
// one (Lab.Do). Services that live in a lab host (netlab/dns,
// netlab/xdsserver) take one.
type Namespaces interface {
	Do(host string, f func() error) error
}

// AddServiceAddrs adds addrs to the loopback of host's namespace, where a
// service inside the lab listens (the DNS, the xDS management server), after
// checking that it is a lab namespace: one whose links carry a lab address
// and nothing else routable (the root namespace never does). It returns when
// every IPv6 address has its local route, so packets sent to it right away
// are delivered. If it fails, what it added is removed again.
//
// The addresses vanish with the namespace; remove takes them away earlier.
func AddServiceAddrs(ns Namespaces, host string, addrs ...netip.Addr) (remove func() error, err error) {
	addrs = slices.Clone(addrs)
	if err := ns.Do(host, func() error { return addLoopbackAddrs(addrs) }); err != nil {
		return nil, err
	}
	return func() error { return ns.Do(host, func() error { return removeLoopbackAddrs(addrs) }) }, nil
}

// routeWait bounds how long AddServiceAddrs waits for the IPv6 local routes.
const routeWait = 5 * time.Second

// addLoopbackAddrs adds addrs to lo in the calling thread's namespace, after
// checking that it is a lab namespace, and waits for their IPv6 local routes.
func addLoopbackAddrs(addrs []netip.Addr) (err error) {
	h, lo, err := labLoopback()
	if err != nil {
		return fmt.Errorf("refusing to add %v: %w", addrs, err)
	}
	defer h.Close()
	var added, v6 []netip.Addr
	defer func() {
		if err != nil {
			for _, a := range added {
				_ = h.AddrDel(lo, loopbackAddr(a))
			}
		}
	}()
	for _, a := range addrs {
		if err := h.AddrAdd(lo, loopbackAddr(a)); err != nil {
			return fmt.Errorf("adding %s to lo: %w", a, err)
		}
		added = append(added, a)
		if a.Is6() {
			v6 = append(v6, a)
		}
	}
	// The kernel installs an IPv6 address's local route from a work queue,
	// after AddrAdd returns (even with IFA_F_NODAD): until then packets to
	// it leave by eth0 and are lost, while binding already works. Measured
	// (netlab/dns): about half of the queries sent right away got no answer.
	return waitLocalRoutes(v6, routeWait)
}

// removeLoopbackAddrs removes addrs from lo in the calling thread's
// namespace, after checking that it is a lab namespace; an address already
// gone is no error.
func removeLoopbackAddrs(addrs []netip.Addr) error {
	h, lo, err := labLoopback()
	if err != nil {
		return fmt.Errorf("refusing to remove %v: %w", addrs, err)
	}
	defer h.Close()
	for _, a := range addrs {
		if err := h.AddrDel(lo, loopbackAddr(a)); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return fmt.Errorf("removing %s from lo: %w", a, err)
		}
	}
	return nil
}

// labLoopback opens a netlink handle on the calling thread's namespace (not
// the package's root handle) and finds its lo, after checking that the
// namespace is a lab one. The caller closes h.
func labLoopback() (h *netlink.Handle, lo netlink.Link, err error) {
	h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, nil, fmt.Errorf("netlink: %w", err)
	}
	if err := checkLabNamespace(h); err != nil {
		h.Close()
		return nil, nil, err
	}
	if lo, err = h.LinkByName("lo"); err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("lo: %w", err)
	}
	return h, lo, nil
}

// loopbackAddr is a as a host address on lo. No duplicate address
// detection: with it, binding IPv6 fails for ~1.8 s (DESIGN.md).
func loopbackAddr(a netip.Addr) *netlink.Addr {
	ipnet := &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
	return &netlink.Addr{IPNet: ipnet, Flags: unix.IFA_F_NODAD}
}

// waitLocalRoutes waits until the calling thread's namespace has a local
// route for each of addrs (a route update, or already in the initial dump).
func waitLocalRoutes(addrs []netip.Addr, timeout time.Duration) error {
	if len(addrs) == 0 {
		return nil
	}
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
	missing := slices.Clone(addrs)
	for len(missing) > 0 {
		select {
		case u, ok := <-updates:
			if !ok {
				return fmt.Errorf("watching routes for %v: subscription ended", missing)
			}
			if u.Type != unix.RTM_NEWROUTE || u.Route.Type != unix.RTN_LOCAL || u.Dst == nil {
				continue
			}
			if d, ok := netip.AddrFromSlice(u.Dst.IP); ok {
				missing = slices.DeleteFunc(missing, func(a netip.Addr) bool { return a == d.Unmap() })
			}
		case <-timer.C:
			return fmt.Errorf("no local route for %v within %v", missing, timeout)
		}
	}
	return nil
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
		case InLab(ip):
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
