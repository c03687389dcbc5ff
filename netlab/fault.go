package netlab

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Fault is what an address does to a client connecting to it.
type Fault int

// The faults of DESIGN.md. Drop and Reset act on new connections only (SYNs);
// Stall, Down and FailRPCs are carried out by the backend itself; Down also
// closes the address's live connections. FailRPCs leaves connections alone
// and fails the RPCs on them (Lab.FailRPCs).
const (
	FaultNone     Fault = iota // healthy
	FaultDrop                  // SYN dropped: connect hangs; the kernel retransmits at ~1 s steps
	FaultReset                 // SYN answered with a TCP reset: connect fails within a round trip
	FaultStall                 // TCP accepted, HTTP/2 never answered
	FaultDown                  // no listener; live connections closed
	FaultFailRPCs              // served, but every RPC but the health service's answered with a status code
)

var faultNames = []string{"none", "drop", "reset", "stall", "down", "fail_rpcs"}

func (f Fault) String() string {
	if int(f) >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// ParseFault parses a fault's name ("drop", "reset", "stall", "down",
// "fail_rpcs", "none").
func ParseFault(s string) (Fault, error) {
	if i := slices.Index(faultNames, s); i >= 0 {
		return Fault(i), nil
	}
	return 0, fmt.Errorf("netlab: unknown fault %q (want one of drop, reset, stall, down, fail_rpcs, none)", s)
}

// firewall holds the nftables rules of one backend namespace: a table
// "conform" (family inet) with one input chain whose rules drop or reset SYNs
// to faulted addresses. The whole chain is rewritten in one netlink batch on
// every change, so a change is atomic and in force when apply returns.
type firewall struct {
	conn  *nftables.Conn
	table *nftables.Table
	chain *nftables.Chain
}

func newFirewall(nsFD int) (*firewall, error) {
	conn, err := nftables.New(nftables.WithNetNSFd(nsFD), nftables.AsLasting())
	if err != nil {
		return nil, fmt.Errorf("netlab: nftables: %w", err)
	}
	fw := &firewall{conn: conn}
	fw.table = conn.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "conform"})
	policy := nftables.ChainPolicyAccept
	fw.chain = conn.AddChain(&nftables.Chain{
		Name:     "faults",
		Table:    fw.table,
		Type:     nftables.ChainTypeFilter,
		Hooknum:  nftables.ChainHookInput,
		Priority: nftables.ChainPriorityFilter,
		Policy:   &policy,
	})
	if err := conn.Flush(); err != nil {
		conn.CloseLasting()
		return nil, fmt.Errorf("netlab: nftables: creating table: %w", err)
	}
	return fw, nil
}

// apply replaces the chain's rules with one rule per Drop or Reset entry.
func (fw *firewall) apply(faults map[netip.AddrPort]Fault) error {
	fw.conn.FlushChain(fw.chain)
	keys := make([]netip.AddrPort, 0, len(faults))
	for ap := range faults {
		keys = append(keys, ap)
	}
	slices.SortFunc(keys, func(a, b netip.AddrPort) int { return a.Compare(b) })
	for _, ap := range keys {
		var verdict expr.Any
		switch faults[ap] {
		case FaultDrop:
			verdict = &expr.Verdict{Kind: expr.VerdictDrop}
		case FaultReset:
			verdict = &expr.Reject{Type: unix.NFT_REJECT_TCP_RST}
		default:
			continue
		}
		fw.conn.AddRule(&nftables.Rule{
			Table: fw.table, Chain: fw.chain,
			Exprs: append(matchSYNTo(ap), verdict),
		})
	}
	if err := fw.conn.Flush(); err != nil {
		return fmt.Errorf("netlab: nftables: %w", err)
	}
	return nil
}

func (fw *firewall) close() { fw.conn.CloseLasting() }

// matchSYNTo matches a TCP segment to ap with SYN set and ACK clear: the
// opening of a new connection, never a packet of an established one.
func matchSYNTo(ap netip.AddrPort) []expr.Any {
	proto, off := byte(unix.NFPROTO_IPV4), uint32(16) // IPv4 destination
	if ap.Addr().Is6() {
		proto, off = unix.NFPROTO_IPV6, 24 // IPv6 destination
	}
	addr := ap.Addr().AsSlice()
	port := binary.BigEndian.AppendUint16(nil, ap.Port())
	const synACK, syn = 0x12, 0x02
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(len(addr))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: port},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{synACK}, Xor: []byte{0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{syn}},
	}
}
