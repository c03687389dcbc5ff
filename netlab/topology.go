package netlab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// loIndex is the loopback's interface index, in every namespace.
const loIndex = 1

// addrGenModeNone is IN6_ADDR_GEN_MODE_NONE (linux/if_link.h): no IPv6
// link-local address.
const addrGenModeNone = 1

// host is one namespace plugged into the switch: a client or a backend.
type host struct {
	name   string // "client0", or the backend's name
	port   string // its veth's name in the switch namespace: "c0", "b17"
	ns     netns.NsHandle
	mac    net.HardwareAddr
	v4     netip.Addr       // zero when the host has no IPv4
	v6     netip.Addr       // zero when the host has no IPv6
	listen []netip.AddrPort // a backend's addresses, to listen on

	// While the lab is built:
	h    *netlink.Handle // netlink in the host's namespace
	eth0 netlink.Link
	lns  []net.Listener // open on listen, for the backend to serve
}

// hostMAC derives a host's MAC address from its role and index, like its IP
// addresses: locally administered, never seen outside the lab.
func hostMAC(backend bool, index int) net.HardwareAddr {
	role := byte(0)
	if backend {
		role = 1
	}
	n := index + 1
	return net.HardwareAddr{0x02, 0xc0, 0xf0, role, byte(n >> 8), byte(n)}
}

// plug creates hst's namespace and, on a thread inside it, connects it to
// the switch and configures it (setUpHost). On error, the namespace (if
// any) is in hst.ns.
func plug(sw *switchNS, hst *host, peers []*host) error {
	var err error
	hst.ns, err = inNewNS(func(ns netns.NsHandle) error { return setUpHost(sw, hst, ns, peers) })
	return err
}

// setUpHost runs on a thread inside ns, hst's new namespace. It opens the
// host's netlink handle (kept in hst.h until the lab is built), creates its
// veth, brings up lo and eth0, adds its addresses and a neighbour entry for
// every address of peers, and opens its listeners.
func setUpHost(sw *switchNS, hst *host, ns netns.NsHandle, peers []*host) error {
	var err error
	if hst.h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
		return fmt.Errorf("netlab: %s: netlink: %w", hst.name, err)
	}
	if err := sw.addVeth(hst.port, ns, hst.mac); err != nil {
		return fmt.Errorf("netlab: %s: creating veth: %w", hst.name, err)
	}
	if err := configureHost(hst); err != nil {
		return fmt.Errorf("netlab: %s: %w", hst.name, err)
	}
	if err := addNeighbours(hst, peers); err != nil {
		return fmt.Errorf("netlab: %s: %w", hst.name, err)
	}
	for _, ap := range hst.listen {
		lis, err := net.Listen("tcp", ap.String()) // in ns: this thread is
		if err != nil {
			return fmt.Errorf("netlab: backend %s: listen on %s: %w", hst.name, ap, err)
		}
		hst.lns = append(hst.lns, lis)
	}
	return nil
}

// configureHost brings up lo and eth0 and adds the host's addresses. eth0
// gets no IPv6 link-local address (address generation mode none, set while
// it is still down): the lab needs none, and without one the host sends no
// duplicate address detection, router solicitation or listener report for
// it, each flooded by the bridge to every host. IPv6 addresses skip
// duplicate address detection (IFA_F_NODAD): with it, binding fails for
// ~1.8 s.
func configureHost(hst *host) error {
	h := hst.h
	var err error
	if hst.eth0, err = h.LinkByName("eth0"); err != nil {
		return fmt.Errorf("eth0: %w", err)
	}
	if err := h.LinkSetIP6AddrGenMode(hst.eth0, addrGenModeNone); err != nil {
		return fmt.Errorf("eth0: IPv6 address generation: %w", err)
	}
	for _, l := range []netlink.Link{hst.eth0, &netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Index: loIndex}}} {
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("bringing %s up: %w", l.Attrs().Name, err)
		}
	}
	if hst.v4.IsValid() {
		if err := addAddr(h, hst.eth0, netip.PrefixFrom(hst.v4, PrefixV4.Bits()), 0); err != nil {
			return err
		}
	}
	if hst.v6.IsValid() {
		if err := addAddr(h, hst.eth0, netip.PrefixFrom(hst.v6, PrefixV6.Bits()), unix.IFA_F_NODAD); err != nil {
			return err
		}
	}
	return nil
}

// addNeighbours gives hst a permanent neighbour entry for every address of
// peers: no ARP or neighbour discovery ever runs, so a SYN leaves (and is
// stamped by the kernel) the moment it is sent, not after a resolution.
func addNeighbours(hst *host, peers []*host) error {
	for _, p := range peers {
		for _, a := range []netip.Addr{p.v4, p.v6} {
			if !a.IsValid() {
				continue
			}
			n := &netlink.Neigh{LinkIndex: hst.eth0.Attrs().Index, State: netlink.NUD_PERMANENT, IP: a.AsSlice(), HardwareAddr: p.mac}
			if err := hst.h.NeighSet(n); err != nil {
				return fmt.Errorf("neighbour %s: %w", a, err)
			}
		}
	}
	return nil
}

func addAddr(h *netlink.Handle, l netlink.Link, p netip.Prefix, flags int) error {
	ipnet := &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipnet, Flags: flags}); err != nil {
		return fmt.Errorf("adding %s: %w", p, err)
	}
	return nil
}

// writeSysctl sets a sysctl of the calling thread's network namespace.
func writeSysctl(name, value string) error {
	err := os.WriteFile("/proc/sys/"+name, []byte(value), 0)
	if err != nil {
		return fmt.Errorf("netlab: sysctl %s: %w", name, err)
	}
	return nil
}

// waitLinksUp waits until every host's veth is operationally up at both ends:
// its eth0 and its port on the bridge. A link set up is not yet forwarding:
// the kernel turns the carrier on, and enables the bridge port, from its
// link-watch work, asynchronously; a SYN sent before that is lost and the
// connection attempt waits for the 1 s retransmission. And an IPv6 address
// is usable only once the kernel has completed its (skipped, IFA_F_NODAD)
// duplicate address detection, on a work queue too, and added its local
// route: a packet to it before that is discarded. Measured: without the
// wait, the first connection from the client to a backend of a lab just
// started was lost in one run out of three.
func waitLinksUp(ctx context.Context, sw *netlink.Handle, hosts []*host) error {
	for _, hst := range hosts {
		h := hst.h
		err := waitOperUp(ctx, sw, hst.port)
		if err == nil {
			err = waitOperUp(ctx, h, "eth0")
		}
		if err == nil && hst.v6.IsValid() {
			err = waitAddrUsable(ctx, h, hst.eth0, hst.v6)
		}
		if err != nil {
			return fmt.Errorf("netlab: %s: %w", hst.name, err)
		}
	}
	return nil
}

// linkUpTimeout bounds waitOperUp; link-watch runs within a second even
// when it is rate-limited.
const linkUpTimeout = 5 * time.Second

func waitOperUp(ctx context.Context, h *netlink.Handle, name string) error {
	ctx, cancel := context.WithTimeout(ctx, linkUpTimeout)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		l, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not come up (operational state %s): %w", name, l.Attrs().OperState, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitAddrUsable waits until a, an IPv6 address of link l, is usable: no
// longer tentative, and in the local routing table (the kernel adds the
// local route only once duplicate address detection has completed).
func waitAddrUsable(ctx context.Context, h *netlink.Handle, l netlink.Link, a netip.Addr) error {
	ctx, cancel := context.WithTimeout(ctx, linkUpTimeout)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := addrUsable(h, l, a); err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not usable yet: %w", a, ctx.Err())
		case <-tick.C:
		}
	}
}

func addrUsable(h *netlink.Handle, l netlink.Link, a netip.Addr) (bool, error) {
	addrs, err := h.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		return false, fmt.Errorf("%s: listing addresses: %w", l.Attrs().Name, err)
	}
	settled := false
	for _, x := range addrs {
		if ip, ok := netip.AddrFromSlice(x.IP); ok && ip.Unmap() == a && x.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 {
			settled = true
		}
	}
	if !settled {
		return false, nil
	}
	routes, err := h.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Table: unix.RT_TABLE_LOCAL, Dst: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(128, 128)}},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
	if err != nil {
		return false, fmt.Errorf("listing local routes: %w", err)
	}
	for _, r := range routes {
		if r.Type == unix.RTN_LOCAL {
			return true, nil
		}
	}
	return false, nil
}
