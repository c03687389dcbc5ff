package netlab

import (
	"fmt"
	"net"
	"net/netip"

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
	v4   netip.Addr // zero when the host has no IPv4
	v6   netip.Addr // zero when the host has no IPv6
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
func plug(switchNS netns.NsHandle, hst *host) error {
	ns, err := newNS()
	if err != nil {
		return err
	}
	hst.ns = ns
	sw, err := netlink.NewHandleAt(switchNS)
	if err != nil {
		return fmt.Errorf("netlab: netlink in switch namespace: %w", err)
	}
	defer sw.Close()
	br, err := sw.LinkByName(bridgeName)
	if err != nil {
		return fmt.Errorf("netlab: finding bridge: %w", err)
	}
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: hst.port, MasterIndex: br.Attrs().Index, Flags: net.FlagUp},
		PeerName:         "eth0",
		PeerHardwareAddr: hst.mac,
		PeerNamespace:    netlink.NsFd(int(ns)),
	}
	if err := sw.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: %s: creating veth: %w", hst.name, err)
	}
	return configureHost(hst)
}

// configureHost brings up lo and eth0 in the host's namespace and adds its
// addresses. IPv6 addresses skip duplicate address detection (IFA_F_NODAD):
// with it, binding fails for ~1.8 s.
func configureHost(hst *host) error {
	h, err := netlink.NewHandleAt(hst.ns)
	if err != nil {
		return fmt.Errorf("netlab: %s: netlink: %w", hst.name, err)
	}
	defer h.Close()
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
	h, err := netlink.NewHandleAt(hst.ns)
	if err != nil {
		return fmt.Errorf("netlab: %s: netlink: %w", hst.name, err)
	}
	defer h.Close()
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
