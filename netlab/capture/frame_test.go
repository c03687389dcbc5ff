package capture

import (
	"encoding/binary"
	"net/netip"
)

// segment describes a TCP segment for buildFrame.
type segment struct {
	src, dst netip.AddrPort
	flags    byte
	seq      uint32
	ipv4Opts int  // bytes of IPv4 options (a multiple of 4)
	fragOff  bool // IPv4: a non-first fragment
	proto    byte // 0 means TCP
	v6Next   byte // IPv6: next header if not proto (an extension header)
}

// buildFrame returns an Ethernet frame carrying s; checksums are left zero,
// as neither the filter nor the decoder reads them.
func buildFrame(s segment) []byte {
	proto := s.proto
	if proto == 0 {
		proto = protoTCP
	}
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], s.src.Port())
	binary.BigEndian.PutUint16(tcp[2:], s.dst.Port())
	binary.BigEndian.PutUint32(tcp[4:], s.seq)
	tcp[12] = 5 << 4
	tcp[13] = s.flags
	if s.src.Addr().Is4() {
		return append(ether(etherTypeIPv4), append(ipv4Header(s, proto, len(tcp)), tcp...)...)
	}
	return append(ether(etherTypeIPv6), append(ipv6Header(s, proto, len(tcp)), tcp...)...)
}

func ether(etherType uint16) []byte {
	b := make([]byte, ethHeaderLen)
	copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:], etherType)
	return b
}

func ipv4Header(s segment, proto byte, payload int) []byte {
	hl := 20 + s.ipv4Opts
	b := make([]byte, hl)
	b[0] = 4<<4 | byte(hl/4)
	binary.BigEndian.PutUint16(b[2:], uint16(hl+payload))
	if s.fragOff {
		binary.BigEndian.PutUint16(b[6:], 185) // offset 1480 bytes
	}
	b[8] = 64
	b[9] = proto
	src, dst := s.src.Addr().As4(), s.dst.Addr().As4()
	copy(b[12:16], src[:])
	copy(b[16:20], dst[:])
	for i := 20; i < hl; i++ {
		b[i] = 1 // NOP options
	}
	return b
}

func ipv6Header(s segment, proto byte, payload int) []byte {
	b := make([]byte, ipv6HdrLen)
	b[0] = 6 << 4
	binary.BigEndian.PutUint16(b[4:], uint16(payload))
	b[6] = proto
	if s.v6Next != 0 {
		b[6] = s.v6Next
	}
	b[7] = 64
	src, dst := s.src.Addr().As16(), s.dst.Addr().As16()
	copy(b[8:24], src[:])
	copy(b[24:40], dst[:])
	return b
}
