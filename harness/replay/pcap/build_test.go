package pcap

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/dns/dnsmessage"
)

// t0 is the synthetic captures' first instant.
var t0 = time.Unix(1_750_000_000, 123_456_789).UTC()

// Addresses of the synthetic captures, from the lab's ranges.
var (
	client4 = netip.MustParseAddr("198.18.0.2")
	server4 = netip.MustParseAddr("198.19.0.1")
	client6 = netip.MustParseAddr("fd00:c0f::2")
	server6 = netip.MustParseAddr("fd00:c0f:1::1")
	dns4    = netip.MustParseAddrPort("198.18.255.53:53")
)

func ap(a netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(a, port) }

// builder serializes frames of one link type with gopacket, for captures
// built in the tests.
type builder struct {
	tb     testing.TB
	link   layers.LinkType
	ifidx  uint32 // SLL2's interface index
	frames []Frame
	cut    map[int]int // frame index → bytes the snap length cut off its end
}

func newBuilder(tb testing.TB, link layers.LinkType) *builder {
	return &builder{tb: tb, link: link, ifidx: 2}
}

// tcp adds a segment at t0+at; flags is a set of S, A, R, F, P.
func (b *builder) tcp(at time.Duration, src, dst netip.AddrPort, seq, ack uint32, flags string, payload []byte) {
	b.tb.Helper()
	t := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq, Ack: ack,
		SYN: strings.Contains(flags, "S"), ACK: strings.Contains(flags, "A"), RST: strings.Contains(flags, "R"),
		FIN: strings.Contains(flags, "F"), PSH: strings.Contains(flags, "P"), Window: 64240}
	b.add(at, src.Addr(), dst.Addr(), layers.IPProtocolTCP, t, payload)
}

// udp adds a datagram at t0+at.
func (b *builder) udp(at time.Duration, src, dst netip.AddrPort, payload []byte) {
	b.tb.Helper()
	u := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	b.add(at, src.Addr(), dst.Addr(), layers.IPProtocolUDP, u, payload)
}

type transport interface {
	gopacket.SerializableLayer
	SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
}

func (b *builder) add(at time.Duration, src, dst netip.Addr, proto layers.IPProtocol, tr transport, payload []byte) {
	b.tb.Helper()
	var ip gopacket.SerializableLayer
	var ethType layers.EthernetType
	if src.Is4() {
		ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
		ip, ethType = ip4, layers.EthernetTypeIPv4
		_ = tr.SetNetworkLayerForChecksum(ip4)
	} else {
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: net.IP(src.AsSlice()), DstIP: net.IP(dst.AsSlice())}
		ip, ethType = ip6, layers.EthernetTypeIPv6
		_ = tr.SetNetworkLayerForChecksum(ip6)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ip, tr, gopacket.Payload(payload)); err != nil {
		b.tb.Fatalf("serializing: %v", err)
	}
	b.frames = append(b.frames, Frame{Time: t0.Add(at), Data: b.linkHeader(ethType, buf.Bytes())})
}

// linkHeader puts the link layer's header in front of an IP packet.
func (b *builder) linkHeader(ethType layers.EthernetType, ip []byte) []byte {
	b.tb.Helper()
	switch b.link {
	case layers.LinkTypeEthernet:
		buf := gopacket.NewSerializeBuffer()
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, EthernetType: ethType}
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, eth, gopacket.Payload(ip)); err != nil {
			b.tb.Fatalf("serializing Ethernet: %v", err)
		}
		return buf.Bytes()
	case layers.LinkTypeLinuxSLL:
		h := make([]byte, 16) // packet type, ARPHRD, address length, address (8), protocol
		binary.BigEndian.PutUint16(h[2:], 1)
		binary.BigEndian.PutUint16(h[4:], 6)
		binary.BigEndian.PutUint16(h[14:], uint16(ethType))
		return append(h, ip...)
	case layers.LinkTypeLinuxSLL2:
		h := make([]byte, 20) // protocol, reserved, ifindex, ARPHRD, packet type, address length, address (8)
		binary.BigEndian.PutUint16(h[0:], uint16(ethType))
		binary.BigEndian.PutUint32(h[4:], b.ifidx)
		binary.BigEndian.PutUint16(h[8:], 1)
		h[10], h[11] = 4, 6 // outgoing, 6-byte address
		return append(h, ip...)
	}
	return ip // raw IP
}

// cutLast cuts n bytes off the end of the last frame, as a snap length
// would: the pcap file records its length on the wire.
func (b *builder) cutLast(n int) {
	i := len(b.frames) - 1
	b.frames[i].Data = b.frames[i].Data[:len(b.frames[i].Data)-n]
	if b.cut == nil {
		b.cut = map[int]int{}
	}
	b.cut[i] = n
}

// pcap is the frames as a nanosecond pcap file.
func (b *builder) pcap() []byte {
	b.tb.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(262144, b.link); err != nil {
		b.tb.Fatal(err)
	}
	for i, f := range b.frames {
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: len(f.Data) + b.cut[i]}
		if err := w.WritePacket(ci, f.Data); err != nil {
			b.tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

// pcapng is the frames as a pcapng file, through Writer.
func (b *builder) pcapng() []byte {
	b.tb.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterConfig{Scenario: "synthetic", Interface: "any", LinkType: b.link})
	if err != nil {
		b.tb.Fatal(err)
	}
	for _, f := range b.frames {
		if err := w.WriteFrame(f); err != nil {
			b.tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.tb.Fatal(err)
	}
	return buf.Bytes()
}

// dnsQuery is a query for name of type qt with id.
func dnsQueryMsg(tb testing.TB, id uint16, name string, qt dnsmessage.Type) []byte {
	tb.Helper()
	m := dnsmessage.Message{Header: dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: qt, Class: dnsmessage.ClassINET}}}
	out, err := m.Pack()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// dnsAnswerMsg answers a query with addrs (A or AAAA each by its family)
// and rcode.
func dnsAnswerMsg(tb testing.TB, id uint16, name string, qt dnsmessage.Type, rcode dnsmessage.RCode, addrs ...netip.Addr) []byte {
	tb.Helper()
	n := dnsmessage.MustNewName(name)
	m := dnsmessage.Message{Header: dnsmessage.Header{ID: id, Response: true, Authoritative: true, RCode: rcode},
		Questions: []dnsmessage.Question{{Name: n, Type: qt, Class: dnsmessage.ClassINET}}}
	for _, a := range addrs {
		h := dnsmessage.ResourceHeader{Name: n, Class: dnsmessage.ClassINET, TTL: 30}
		if a.Is4() {
			m.Answers = append(m.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AResource{A: a.As4()}})
		} else {
			m.Answers = append(m.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
		}
	}
	out, err := m.Pack()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
