package capture

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// defaultRcvBuf is the socket receive buffer asked for: room for thousands
// of truncated frames, so a slow callback does not make the kernel drop.
const defaultRcvBuf = 4 << 20

// link is what Open needs to know about the captured interface.
type link struct {
	index    int
	loopback bool
}

// lookupLink finds ifname in ns and checks it carries Ethernet frames.
func lookupLink(ns netns.NsHandle, ifname string) (link, error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return link{}, fmt.Errorf("capture: netlink handle in %v: %w", ns, err)
	}
	defer h.Close()
	l, err := h.LinkByName(ifname)
	if err != nil {
		return link{}, fmt.Errorf("capture: link %q: %w", ifname, err)
	}
	encap := l.Attrs().EncapType
	if encap != "ether" && encap != "loopback" {
		return link{}, fmt.Errorf("capture: link %q has link type %q; only Ethernet is supported", ifname, encap)
	}
	return link{index: l.Attrs().Index, loopback: encap == "loopback"}, nil
}

// openSocket opens the packet socket inside ns, bound to ifindex.
func openSocket(ns netns.NsHandle, ifindex, rcvBuf int) (int, error) {
	fd := -1
	err := inNamespace(ns, func() error {
		var err error
		fd, err = newPacketSocket(ifindex, rcvBuf)
		return err
	})
	if err != nil && fd >= 0 {
		unix.Close(fd)
		return -1, err
	}
	return fd, err
}

// newPacketSocket opens a non-blocking AF_PACKET socket in the calling
// thread's namespace. It is created with protocol 0, so it receives nothing
// until bind, by which time the filter is attached: no unfiltered frame
// can slip in between.
func newPacketSocket(ifindex, rcvBuf int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("capture: packet socket: %w", err)
	}
	if err := configure(fd, ifindex, rcvBuf); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// configure attaches the filter, turns on kernel timestamps, sizes the
// receive buffer and binds fd to every protocol on ifindex.
func configure(fd, ifindex, rcvBuf int) error {
	prog, err := assembleFilter()
	if err != nil {
		return fmt.Errorf("capture: assembling filter: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return fmt.Errorf("capture: SO_ATTACH_FILTER: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fmt.Errorf("capture: SO_TIMESTAMPNS: %w", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf) // capped by rmem_max; best effort
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("capture: binding to ifindex %d: %w", ifindex, err)
	}
	return nil
}

// htons puts v in network byte order, as sockaddr_ll's protocol wants it.
func htons(v uint16) uint16 {
	return binary.NativeEndian.Uint16(binary.BigEndian.AppendUint16(nil, v))
}
