package netlab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Check is one thing the lab needs from this machine.
type Check struct {
	Name   string // what is needed, in a few words
	OK     bool
	Detail string // why not, and what to do; or what was found
}

// Availability is the result of checking this machine for the lab.
type Availability []Check

// Err is nil when every check passed, else one error listing what is missing.
func (a Availability) Err() error {
	var missing []string
	for _, c := range a {
		if !c.OK {
			missing = append(missing, c.Name+": "+c.Detail)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("netlab: the lab cannot run here: " + strings.Join(missing, "; "))
}

// Capabilities the lab needs: CAP_SYS_ADMIN to create namespaces,
// CAP_NET_ADMIN to configure them, CAP_NET_RAW to capture.
const (
	capNetAdmin = 12
	capNetRaw   = 13
	capSysAdmin = 21
)

// Available checks, without touching the root namespace, everything the lab
// needs: privileges, network namespaces, veth and bridge, nf_tables, IPv6 and
// packet sockets. Checks after a failed prerequisite are reported as skipped.
func Available() Availability {
	var a Availability
	caps, err := effectiveCaps()
	missing := []string{}
	for _, c := range []struct {
		bit  uint
		name string
	}{{capSysAdmin, "CAP_SYS_ADMIN"}, {capNetAdmin, "CAP_NET_ADMIN"}, {capNetRaw, "CAP_NET_RAW"}} {
		if err != nil || caps&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		detail := fmt.Sprintf("missing %s (uid %d); run as root (sudo) or in a privileged container", strings.Join(missing, ", "), os.Geteuid())
		return append(a, Check{Name: "privileges", Detail: detail})
	}
	a = append(a, Check{Name: "privileges", OK: true, Detail: "root capabilities present"})
	ns, err := newNS()
	if err != nil {
		return append(a, Check{Name: "network namespaces", Detail: err.Error()})
	}
	defer ns.Close()
	a = append(a, Check{Name: "network namespaces", OK: true, Detail: "created an unnamed one"})
	a = append(a, checkLinks(ns), checkNFTables(ns), checkIPv6(ns), checkPacketSocket(ns))
	return a
}

func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}

func checkLinks(ns netns.NsHandle) Check {
	c := Check{Name: "veth and bridge"}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer h.Close()
	if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}); err != nil {
		c.Detail = "creating a bridge: " + err.Error() + " (kernel module bridge)"
		return c
	}
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v0"}, PeerName: "v1"}); err != nil {
		c.Detail = "creating a veth pair: " + err.Error() + " (kernel module veth)"
		return c
	}
	c.OK, c.Detail = true, "created both in a scratch namespace"
	return c
}

func checkNFTables(ns netns.NsHandle) Check {
	c := Check{Name: "nf_tables"}
	fw, err := newFirewall(int(ns))
	if err != nil {
		c.Detail = err.Error() + " (kernel nf_tables, module nf_tables and nft_reject_inet)"
		return c
	}
	defer fw.close()
	if err := fw.apply(probeFaults); err != nil {
		c.Detail = "adding drop and reset rules: " + err.Error()
		return c
	}
	c.OK, c.Detail = true, "drop and TCP-reset rules accepted"
	return c
}

// probeFaults exercises both rule shapes on both families.
var probeFaults = map[netip.AddrPort]Fault{
	netip.AddrPortFrom(BackendAddr(0, IPv4), DefaultPort): FaultDrop,
	netip.AddrPortFrom(BackendAddr(0, IPv6), DefaultPort): FaultReset,
}

func checkIPv6(ns netns.NsHandle) Check {
	c := Check{Name: "IPv6"}
	if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
		c.Detail = "the kernel has no IPv6 (/proc/sys/net/ipv6 missing; ipv6.disable=1?)"
		return c
	}
	err := inNS(ns, func() error {
		l, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "[::1]:0")
		if err != nil {
			return err
		}
		return ln.Close()
	})
	if err != nil {
		c.Detail = "listening on ::1 in a scratch namespace: " + err.Error()
		return c
	}
	c.OK, c.Detail = true, "listened on ::1 in a scratch namespace"
	return c
}

func checkPacketSocket(ns netns.NsHandle) Check {
	c := Check{Name: "packet capture"}
	err := inNS(ns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	})
	if err != nil {
		c.Detail = "opening an AF_PACKET socket: " + err.Error()
		return c
	}
	c.OK, c.Detail = true, "AF_PACKET socket opened"
	return c
}
