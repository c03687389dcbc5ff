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
	"golang.org/x/sync/errgroup"
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

	backend *Backend // made once the host is set up
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
func plug(ctx context.Context, sw *switchNS, hst *host, peers []*host) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
		lis, err := net.Listen("tcp", ap.String()) // in ns, as this thread is
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

// waitLinksUp waits until every host's veth is operationally up at both ends
// (its eth0 and its port on the bridge) and every IPv6 address is usable. A
// link set up is not yet forwarding: the kernel turns the carrier on, and
// enables the bridge port, from its link-watch work, asynchronously; a SYN
// sent before that is lost and the connection attempt waits for the 1 s
// retransmission. And an IPv6 address is usable only once the kernel has
// completed its (skipped, IFA_F_NODAD) duplicate address detection, on a
// work queue too, and added its local route: a packet to it before that is
// discarded. Measured: without the wait, the first connection from the
// client to a backend of a lab just started was lost in one run out of
// three. The hosts are checked several at a time.
func waitLinksUp(ctx context.Context, sw *netlink.Handle, hosts []*host) error {
	ctx, cancel := context.WithTimeout(ctx, linkUpTimeout)
	defer cancel()
	if err := poll(ctx, func() (string, error) { return portsUp(sw, hosts) }); err != nil {
		return fmt.Errorf("netlab: switch: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(plugParallelism)
	for _, hst := range hosts {
		g.Go(func() error {
			if err := poll(gctx, func() (string, error) { return hostReady(hst) }); err != nil {
				return fmt.Errorf("netlab: %s: %w", hst.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// linkUpTimeout bounds waitLinksUp; link-watch runs within a second even
// when it is rate-limited.
const linkUpTimeout = 5 * time.Second

// poll calls check every millisecond until it reports nothing pending (or
// fails); on timeout, the error says what was still pending.
func poll(ctx context.Context, check func() (pending string, err error)) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		pending, err := check()
		if err != nil || pending == "" {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", pending, ctx.Err())
		case <-tick.C:
		}
	}
}

// portsUp checks, from one dump of the switch's links, that every host's
// port on the bridge is operationally up.
func portsUp(sw *netlink.Handle, hosts []*host) (pending string, err error) {
	links, err := sw.LinkList()
	if err != nil {
		return "", err
	}
	state := make(map[string]netlink.LinkOperState, len(links))
	for _, l := range links {
		state[l.Attrs().Name] = l.Attrs().OperState
	}
	for _, hst := range hosts {
		if s := state[hst.port]; s != netlink.OperUp {
			return fmt.Sprintf("port %s is %s", hst.port, s), nil
		}
	}
	return "", nil
}

// hostReady checks that hst's eth0 is operationally up and its IPv6
// address, if any, usable: the kernel routes packets to it locally (it adds
// the local route only once duplicate address detection has completed,
// after the address is no longer tentative).
func hostReady(hst *host) (pending string, err error) {
	l, err := hst.h.LinkByIndex(hst.eth0.Attrs().Index)
	if err != nil {
		return "", fmt.Errorf("eth0: %w", err)
	}
	if s := l.Attrs().OperState; s != netlink.OperUp {
		return fmt.Sprintf("eth0 is %s", s), nil
	}
	if !hst.v6.IsValid() {
		return "", nil
	}
	routes, err := hst.h.RouteGet(hst.v6.AsSlice())
	if err != nil {
		return "", fmt.Errorf("route to %s: %w", hst.v6, err)
	}
	for _, r := range routes {
		if r.Type == unix.RTN_LOCAL {
			return "", nil
		}
	}
	return fmt.Sprintf("%s is not local yet", hst.v6), nil
}
