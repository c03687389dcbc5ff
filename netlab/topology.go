package netlab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const bridgeName = "br0"

// host is one namespace plugged into the switch: a client or a backend.
type host struct {
	name string // "client0", or the backend's name
	port string // its veth's name in the switch namespace: "c0", "b17"
	ns   netns.NsHandle
	mac  net.HardwareAddr
	h    *netlink.Handle // netlink in the host's namespace, while the lab is built
	v4   netip.Addr      // zero when the host has no IPv4
	v6   netip.Addr      // zero when the host has no IPv6
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

// newSwitch creates the switch namespace with its bridge.
func newSwitch() (netns.NsHandle, error) {
	ns, err := newNS()
	if err != nil {
		return ns, err
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return netns.None(), fmt.Errorf("netlab: netlink in switch namespace: %w", err)
	}
	defer h.Close()
	off := false
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName, Flags: net.FlagUp}, MulticastSnooping: &off}
	if err := h.LinkAdd(br); err != nil {
		ns.Close()
		return netns.None(), fmt.Errorf("netlab: creating bridge: %w", err)
	}
	return ns, nil
}

// plug creates hst's namespace and connects it to the switch: a veth made
// inside the switch namespace whose peer is placed straight into the host's
// namespace as eth0, so nothing ever appears in the root namespace.
// sw is a netlink handle in the switch namespace (safe for concurrent use:
// its requests are serialized), bridge the bridge's index.
func plug(sw *netlink.Handle, bridge int, hst *host) error {
	ns, err := newNS()
	if err != nil {
		return err
	}
	hst.ns = ns
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: hst.port, MasterIndex: bridge, Flags: net.FlagUp},
		PeerName:         "eth0",
		PeerHardwareAddr: hst.mac,
		PeerNamespace:    netlink.NsFd(int(ns)),
	}
	if err := sw.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: %s: creating veth: %w", hst.name, err)
	}
	return configureHost(hst)
}

// configureHost opens the host's netlink handle (kept in hst.h until the
// lab is built), brings up lo and eth0 and adds its addresses. IPv6
// addresses skip duplicate address detection (IFA_F_NODAD): with it,
// binding fails for ~1.8 s.
func configureHost(hst *host) error {
	h, err := netlink.NewHandleAt(hst.ns)
	if err != nil {
		return fmt.Errorf("netlab: %s: netlink: %w", hst.name, err)
	}
	hst.h = h
	for _, name := range []string{"lo", "eth0"} {
		l, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("netlab: %s: %s: %w", hst.name, name, err)
		}
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("netlab: %s: bringing %s up: %w", hst.name, name, err)
		}
		if name != "eth0" {
			continue
		}
		if hst.v4.IsValid() {
			if err := addAddr(h, l, netip.PrefixFrom(hst.v4, PrefixV4.Bits()), 0); err != nil {
				return fmt.Errorf("netlab: %s: %w", hst.name, err)
			}
		}
		if hst.v6.IsValid() {
			if err := addAddr(h, l, netip.PrefixFrom(hst.v6, PrefixV6.Bits()), unix.IFA_F_NODAD); err != nil {
				return fmt.Errorf("netlab: %s: %w", hst.name, err)
			}
		}
	}
	return nil
}

// addNeighbours gives hst a permanent neighbour entry for every address of
// peers: no ARP or neighbour discovery ever runs, so a SYN leaves (and is
// stamped by the kernel) the moment it is sent, not after a resolution.
func addNeighbours(hst *host, peers []*host) error {
	h := hst.h
	l, err := h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("netlab: %s: eth0: %w", hst.name, err)
	}
	for _, p := range peers {
		for _, a := range []netip.Addr{p.v4, p.v6} {
			if !a.IsValid() {
				continue
			}
			n := &netlink.Neigh{LinkIndex: l.Attrs().Index, State: netlink.NUD_PERMANENT, IP: a.AsSlice(), HardwareAddr: p.mac}
			if err := h.NeighSet(n); err != nil {
				return fmt.Errorf("netlab: %s: neighbour %s: %w", hst.name, a, err)
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

// waitLinksUp waits until every host's veth is operationally up at both ends:
// its eth0 and its port on the bridge. A link set up is not yet forwarding:
// the kernel turns the carrier on, and enables the bridge port, from its
// link-watch work, asynchronously; a SYN sent before that is lost and the
// connection attempt waits for the 1 s retransmission. And when the carrier
// comes up, the kernel marks the IPv6 addresses tentative again until its
// (skipped, IFA_F_NODAD) duplicate address detection completes, on a work
// queue too: a packet to a tentative address is discarded. Measured: without
// the wait, the first connection from the client to a backend of a lab just
// started was lost in one run out of three.
func waitLinksUp(ctx context.Context, sw *netlink.Handle, hosts []*host) error {
	for _, hst := range hosts {
		h := hst.h
		err := waitOperUp(ctx, sw, hst.port)
		if err == nil {
			err = waitOperUp(ctx, h, "eth0")
		}
		if err == nil && hst.v6.IsValid() {
			err = waitAddrUsable(ctx, h, hst.v6)
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

// waitAddrUsable waits until a, an IPv6 address of the host, is usable: no
// longer tentative, and in the local routing table (the kernel adds the
// local route only once duplicate address detection has completed).
func waitAddrUsable(ctx context.Context, h *netlink.Handle, a netip.Addr) error {
	ctx, cancel := context.WithTimeout(ctx, linkUpTimeout)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := addrUsable(h, a); err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not usable yet: %w", a, ctx.Err())
		case <-tick.C:
		}
	}
}

func addrUsable(h *netlink.Handle, a netip.Addr) (bool, error) {
	l, err := h.LinkByName("eth0")
	if err != nil {
		return false, fmt.Errorf("eth0: %w", err)
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		return false, fmt.Errorf("eth0: listing addresses: %w", err)
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
