package pcap

import (
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// supportedLinks are the link types the reader decodes, each with the
// layer its frames begin with (raw IP: by the version nibble).
var supportedLinks = map[layers.LinkType]gopacket.LayerType{
	layers.LinkTypeEthernet:  layers.LayerTypeEthernet,
	layers.LinkTypeLinuxSLL:  layers.LayerTypeLinuxSLL,
	layers.LinkTypeLinuxSLL2: layers.LayerTypeLinuxSLL2,
	layers.LinkTypeNull:      layers.LayerTypeLoopback,
	layers.LinkTypeLoop:      layers.LayerTypeLoopback,
	layers.LinkTypeRaw:       gopacket.LayerTypeZero,
	layers.LinkTypeIPv4:      layers.LayerTypeIPv4,
	layers.LinkTypeIPv6:      layers.LayerTypeIPv6,
	layers.LinkType(12):      gopacket.LayerTypeZero, // DLT_RAW as some systems number it
	layers.LinkType(14):      gopacket.LayerTypeZero, // DLT_RAW on OpenBSD
}

// wantLinks names the supported link types for error messages.
const wantLinks = "want Ethernet (1), Linux cooked capture SLL (113) or SLL2 (276), raw IP (101, 228, 229) or BSD loopback (0, 108): " +
	"capture on the client's network interface, or with tcpdump -i any"

// packet is what the reader needs of one frame: a TCP segment or a UDP
// datagram between two addresses.
type packet struct {
	src, dst netip.AddrPort
	tcp      *layers.TCP // nil for UDP
	payload  []byte      // TCP or UDP payload, as captured
	missing  int         // payload bytes the capture cut off (snap length)
	iface    uint64      // which interface saw it: pcapng interface and SLL2 ifindex
}

// decoder decodes frames with gopacket's DecodingLayerParser into layers
// it reuses from frame to frame.
type decoder struct {
	eth     layers.Ethernet
	vlan    layers.Dot1Q
	sll     layers.LinuxSLL
	sll2    layers.LinuxSLL2
	loop    layers.Loopback
	ip4     layers.IPv4
	ip6     layers.IPv6
	ip6ext  layers.IPv6ExtensionSkipper
	tcp     layers.TCP
	udp     layers.UDP
	parsers map[gopacket.LayerType]*gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
}

func newDecoder() *decoder {
	return &decoder{parsers: map[gopacket.LayerType]*gopacket.DecodingLayerParser{}}
}

// parser returns the parser for frames beginning with first.
func (d *decoder) parser(first gopacket.LayerType) *gopacket.DecodingLayerParser {
	if p := d.parsers[first]; p != nil {
		return p
	}
	p := gopacket.NewDecodingLayerParser(first, &d.eth, &d.vlan, &d.sll, &d.sll2, &d.loop,
		&d.ip4, &d.ip6, &d.ip6ext, &d.tcp, &d.udp)
	p.IgnoreUnsupported = true // ARP, ICMP, fragments...: not ours, and not an error
	d.parsers[first] = p
	return p
}

// decode reads f's TCP segment or UDP datagram. It reports false, with no
// error, for a frame that carries neither; an error says why a frame that
// should could not be decoded.
func (d *decoder) decode(f *frame) (packet, bool, error) {
	first, ok := firstLayer(f.link, f.data)
	if !ok {
		return packet{}, false, nil
	}
	p := d.parser(first)
	if err := p.DecodeLayers(f.data, &d.decoded); err != nil {
		return packet{}, false, fmt.Errorf("%v (headers cut short by the snap length, or a damaged frame)", err)
	}
	return d.packet(f, p.Truncated)
}

// firstLayer is the layer a frame of link type lt begins with.
func firstLayer(lt layers.LinkType, data []byte) (gopacket.LayerType, bool) {
	first, ok := supportedLinks[lt]
	if !ok || first != gopacket.LayerTypeZero {
		return first, ok
	}
	if len(data) == 0 {
		return first, false
	}
	switch data[0] >> 4 {
	case 4:
		return layers.LayerTypeIPv4, true
	case 6:
		return layers.LayerTypeIPv6, true
	}
	return first, false
}

// packet assembles the decoded layers into a packet.
func (d *decoder) packet(f *frame, truncated bool) (packet, bool, error) {
	var pk packet
	var src, dst netip.Addr
	var ipPayload int // bytes after the IP header, by the IP header
	for _, lt := range d.decoded {
		switch lt {
		case layers.LayerTypeLinuxSLL2:
			pk.iface = uint64(f.iface)<<32 | uint64(d.sll2.InterfaceIndex)
		case layers.LayerTypeIPv4:
			src, _ = netip.AddrFromSlice(d.ip4.SrcIP)
			dst, _ = netip.AddrFromSlice(d.ip4.DstIP)
			ipPayload = int(d.ip4.Length) - int(d.ip4.IHL)*4
		case layers.LayerTypeIPv6:
			src, _ = netip.AddrFromSlice(d.ip6.SrcIP)
			dst, _ = netip.AddrFromSlice(d.ip6.DstIP)
			ipPayload = int(d.ip6.Length)
		case layers.LayerTypeTCP:
			pk.tcp, pk.payload = &d.tcp, d.tcp.Payload
			pk.src = netip.AddrPortFrom(src, uint16(d.tcp.SrcPort))
			pk.dst = netip.AddrPortFrom(dst, uint16(d.tcp.DstPort))
			pk.missing = cutOff(truncated, ipPayload-int(d.tcp.DataOffset)*4, len(pk.payload))
		case layers.LayerTypeUDP:
			pk.payload = d.udp.Payload
			pk.src = netip.AddrPortFrom(src, uint16(d.udp.SrcPort))
			pk.dst = netip.AddrPortFrom(dst, uint16(d.udp.DstPort))
			pk.missing = cutOff(truncated, ipPayload-8, len(pk.payload))
		}
	}
	if pk.iface == 0 {
		pk.iface = uint64(f.iface) << 32
	}
	return pk, pk.src.IsValid(), nil
}

// cutOff is how many payload bytes the capture lost, when the IP layer
// said it was cut short: at least one.
func cutOff(truncated bool, want, got int) int {
	if !truncated {
		return 0
	}
	return max(1, want-got)
}
