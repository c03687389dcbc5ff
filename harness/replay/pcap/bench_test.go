package pcap

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/dns/dnsmessage"
)

// benchCapture is a field capture of a few MB: conns connections, each
// after a DNS exchange, a handshake and rpcs RPCs with 1 KiB messages each
// way, in 1400-byte segments; every fifth attempt to an IPv6 address that
// never answers.
func benchCapture(tb testing.TB, conns, rpcs int) *builder {
	b := newBuilder(tb, layers.LinkTypeEthernet)
	msg := bytes.Repeat([]byte{'x'}, 1024)
	for i := range conns {
		at := time.Duration(i) * 10 * ms
		q := ap(client4, uint16(20000+i))
		b.udp(at, q, dns4, dnsQueryMsg(tb, uint16(i), "svc.conform.", dnsmessage.TypeA))
		b.udp(at+ms/10, dns4, q, dnsAnswerMsg(tb, uint16(i), "svc.conform.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, server4))
		if i%5 == 0 {
			b.tcp(at+ms/5, ap(client6, uint16(30000+i)), s6, uint32(i), 0, "S", nil)
		}
		k := b.open(at+ms, ap(client4, uint16(40000+i)), s1, uint32(i)*7, uint32(i)*13)
		h := newH2(tb)
		for r := range rpcs {
			s := uint32(2*r + 1)
			h.request(s, "/conform.Echo/Unary")
			h.check(h.cfr.WriteData(s, true, msg))
			k.send(at+4*ms, true, h.takeClient(), 1400)
			h.respond(s, "0", "")
			h.check(h.sfr.WriteData(s, false, msg))
			k.send(at+5*ms, false, h.takeServer(), 1400)
		}
	}
	return b
}

// BenchmarkRead measures Read's throughput, in MB/s of capture file, on a
// capture of about 4 MB, as pcap and as pcapng.
func BenchmarkRead(b *testing.B) {
	capt := benchCapture(b, 400, 4)
	for _, f := range formats {
		data := f.bytes(capt)
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				c, err := Read("bench."+f.name, bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				if len(c.Attempts) != 480 {
					b.Fatalf("%d attempts, want 480", len(c.Attempts))
				}
			}
			b.ReportMetric(float64(len(data))/1e6, "MB/file")
		})
	}
}
