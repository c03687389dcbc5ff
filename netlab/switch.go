package netlab

import (
	"fmt"
	"net"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const bridgeName = "br0"

// switchNS is the switch namespace while the lab is built: netlink sockets
// in it and its bridge's index.
type switchNS struct {
	ns     netns.NsHandle
	h      *netlink.Handle
	raw    *nl.SocketHandle // for requests the netlink package cannot make
	bridge int
}

// newSwitch creates the switch namespace with its bridge. IPv6 is disabled
// on the bridge and its ports: they forward frames and never need an
// address, and without it they send no neighbour or multicast listener
// discovery packets. On error, the namespace (if any) is in sw.ns.
func newSwitch() (*switchNS, error) {
	sw := &switchNS{}
	var err error
	sw.ns, err = inNewNS(func(netns.NsHandle) error {
		if err := writeSysctl("net/ipv6/conf/default/disable_ipv6", "1"); err != nil {
			return err
		}
		if sw.h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			return fmt.Errorf("netlab: netlink in switch namespace: %w", err)
		}
		s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlab: netlink in switch namespace: %w", err)
		}
		sw.raw = &nl.SocketHandle{Socket: s}
		off := false
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName, Flags: net.FlagUp}, MulticastSnooping: &off}
		if err := sw.h.LinkAdd(br); err != nil {
			return fmt.Errorf("netlab: creating bridge: %w", err)
		}
		sw.bridge = br.Attrs().Index
		return nil
	})
	if err == nil {
		err = dropListenerReports(sw.ns)
	}
	return sw, err
}

// dropListenerReports makes the bridge drop IPv6 multicast listener reports
// instead of flooding them: every host reports the solicited-node group of
// its address, twice, and the bridge would copy each report to every other
// host, n² packets for n hosts (256 backends: ~20 % of Start's CPU time).
// Nothing in the lab needs them: the bridge does not snoop, and there is
// no multicast router. Neighbour solicitations still pass.
func dropListenerReports(ns netns.NsHandle) error {
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return fmt.Errorf("netlab: nftables in switch namespace: %w", err)
	}
	table := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyBridge, Name: "conform"})
	policy := nftables.ChainPolicyAccept
	chain := conn.AddChain(&nftables.Chain{
		Name:     "mld",
		Table:    table,
		Type:     nftables.ChainTypeFilter,
		Hooknum:  nftables.ChainHookPrerouting,
		Priority: nftables.ChainPriorityFilter,
		Policy:   &policy,
	})
	const mldReport, mldDone, mldv2Report = 131, 132, 143
	for _, types := range [][2]byte{{mldReport, mldDone}, {mldv2Report, mldv2Report}} {
		conn.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyPROTOCOL, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0x86, 0xdd}}, // IPv6
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMPV6}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
			&expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: []byte{types[0]}, ToData: []byte{types[1]}},
			&expr.Verdict{Kind: expr.VerdictDrop},
		}})
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("netlab: nftables in switch namespace: %w", err)
	}
	return nil
}

// close closes the sockets; the namespace stays, owned by the lab.
func (sw *switchNS) close() {
	if sw.h != nil {
		sw.h.Close()
	}
	if sw.raw != nil {
		sw.raw.Close()
	}
}

// addVeth creates, in one request, a veth made inside the switch namespace:
// its end there is named port, enslaved to the bridge and up; its peer is
// placed straight into namespace ns as eth0 with MAC mac (down, see
// configureHost), so nothing ever appears in the root namespace. One queue
// each: by default a veth gets one per possible CPU, and the kernel trims
// the extra ones again.
func (sw *switchNS) addVeth(port string, ns netns.NsHandle, mac net.HardwareAddr) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: sw.raw}
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Flags, msg.Change = unix.IFF_UP, unix.IFF_UP
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(port)))
	req.AddData(nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(sw.bridge))))
	req.AddData(nl.NewRtAttr(unix.IFLA_NUM_TX_QUEUES, nl.Uint32Attr(1)))
	req.AddData(nl.NewRtAttr(unix.IFLA_NUM_RX_QUEUES, nl.Uint32Attr(1)))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("veth"))
	peer := info.AddRtAttr(nl.IFLA_INFO_DATA, nil).AddRtAttr(nl.VETH_INFO_PEER, nil)
	nl.NewIfInfomsgChild(peer, unix.AF_UNSPEC)
	peer.AddRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("eth0"))
	peer.AddRtAttr(unix.IFLA_ADDRESS, mac)
	peer.AddRtAttr(unix.IFLA_NET_NS_FD, nl.Uint32Attr(uint32(ns)))
	peer.AddRtAttr(unix.IFLA_NUM_TX_QUEUES, nl.Uint32Attr(1))
	peer.AddRtAttr(unix.IFLA_NUM_RX_QUEUES, nl.Uint32Attr(1))
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}
