package capture

import (
	"encoding/binary"
	"net/netip"
)

// decode parses an Ethernet frame that passed the filter into a Packet
// (without its timestamp). It reports false for anything it cannot parse
// in full; the filter already keeps out what is not a SYN or RST segment.
func decode(b []byte) (Packet, bool) {
	if len(b) < ethHeaderLen {
		return Packet{}, false
	}
	switch binary.BigEndian.Uint16(b[etherTypeOff:]) {
	case etherTypeIPv4:
		return decodeIPv4(b[ipv4Off:])
	case etherTypeIPv6:
		return decodeIPv6(b[ipv6Off:])
	}
	return Packet{}, false
}

func decodeIPv4(b []byte) (Packet, bool) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != protoTCP {
		return Packet{}, false
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 || len(b) < ihl {
		return Packet{}, false
	}
	src := netip.AddrFrom4([4]byte(b[12:16]))
	dst := netip.AddrFrom4([4]byte(b[16:20]))
	return decodeTCP(b[ihl:], src, dst)
}

func decodeIPv6(b []byte) (Packet, bool) {
	if len(b) < ipv6HdrLen || b[0]>>4 != 6 || b[6] != protoTCP {
		return Packet{}, false
	}
	src := netip.AddrFrom16([16]byte(b[8:24]))
	dst := netip.AddrFrom16([16]byte(b[24:40]))
	return decodeTCP(b[ipv6HdrLen:], src, dst)
}

// decodeTCP reads ports, sequence number and flags from a TCP header.
func decodeTCP(b []byte, src, dst netip.Addr) (Packet, bool) {
	if len(b) < 20 {
		return Packet{}, false
	}
	kind := kindOf(b[tcpFlagsOff])
	if kind == 0 {
		return Packet{}, false
	}
	return Packet{
		Kind: kind,
		Src:  netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[0:2])),
		Dst:  netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:4])),
		Seq:  binary.BigEndian.Uint32(b[4:8]),
	}, true
}

// kindOf classifies TCP flags; RST wins over SYN.
func kindOf(flags byte) Kind {
	switch {
	case flags&flagRST != 0:
		return RST
	case flags&(flagSYN|flagACK) == flagSYN|flagACK:
		return SYNACK
	case flags&flagSYN != 0:
		return SYN
	}
	return 0
}
