package pcap

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/capture"
)

const ms = time.Millisecond

// The events the lab records for a client's attempt, as fromLab writes
// them: the server in Addr, the client's port and address in Port and Peer.
func synEv(t time.Duration, c, s netip.AddrPort, retransmit bool) trace.Event {
	return trace.Event{T: t, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: s.String(), Port: int(c.Port()),
		Peer: c.String(), Retransmit: retransmit}
}

func answerEv(t time.Duration, k trace.Kind, c, s netip.AddrPort) trace.Event {
	return trace.Event{T: t, Source: trace.SourceCapture, Kind: k, Addr: s.String(), Port: int(c.Port()), Peer: c.String()}
}

func dnsEv(t time.Duration, c netip.AddrPort, detail string) trace.Event {
	return trace.Event{T: t, Source: trace.SourceHarness, Kind: trace.KindDNSQuery, Peer: c.String(), Detail: detail}
}

// readCase is one synthetic capture and what reading it must give.
type readCase struct {
	name     string
	link     layers.LinkType
	opts     []Option
	build    func(b *builder)
	want     []trace.Event
	outcomes []capture.Outcome // of Attempts, in order
}

var (
	c1 = ap(client4, 40001)
	c2 = ap(client4, 40002)
	s1 = ap(server4, 50051)
	c6 = ap(client6, 40003)
	s6 = ap(server6, 50051)
)

var readCases = []readCase{
	{
		name: "syn answered by syn-ack", link: layers.LinkTypeEthernet,
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1000, 0, "S", nil)
			b.tcp(300*time.Microsecond, s1, c1, 5000, 1001, "SA", nil)
			b.tcp(400*time.Microsecond, c1, s1, 1001, 5001, "A", nil)
		},
		want:     []trace.Event{synEv(0, c1, s1, false), answerEv(300*time.Microsecond, trace.KindSYNACK, c1, s1)},
		outcomes: []capture.Outcome{capture.Established},
	},
	{
		name: "syn refused by rst", link: layers.LinkTypeEthernet,
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1000, 0, "S", nil)
			b.tcp(ms, s1, c1, 0, 1001, "RA", nil)
		},
		want:     []trace.Event{synEv(0, c1, s1, false), answerEv(ms, trace.KindRST, c1, s1)},
		outcomes: []capture.Outcome{capture.Reset},
	},
	{
		name: "syn retransmitted then answered", link: layers.LinkTypeEthernet,
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1000, 0, "S", nil)
			b.tcp(1000*ms, c1, s1, 1000, 0, "S", nil)
			b.tcp(1001*ms, s1, c1, 5000, 1001, "SA", nil)
		},
		want: []trace.Event{synEv(0, c1, s1, false), synEv(1000*ms, c1, s1, true),
			answerEv(1001*ms, trace.KindSYNACK, c1, s1)},
		outcomes: []capture.Outcome{capture.Established},
	},
	{
		name: "syn never answered, then another address", link: layers.LinkTypeEthernet,
		build: func(b *builder) {
			b.tcp(0, c6, s6, 1000, 0, "S", nil)
			b.tcp(250*ms, c1, s1, 2000, 0, "S", nil)
			b.tcp(251*ms, s1, c1, 7000, 2001, "SA", nil)
			b.tcp(1000*ms, c6, s6, 1000, 0, "S", nil)
		},
		want: []trace.Event{synEv(0, c6, s6, false), synEv(250*ms, c1, s1, false),
			answerEv(251*ms, trace.KindSYNACK, c1, s1), synEv(1000*ms, c6, s6, true)},
		outcomes: []capture.Outcome{capture.Unanswered, capture.Established},
	},
	{
		name: "ipv6 over linux cooked capture v2 (tcpdump -i any)", link: layers.LinkTypeLinuxSLL2,
		build: func(b *builder) {
			b.tcp(0, c6, s6, 1, 0, "S", nil)
			b.tcp(2*ms, s6, c6, 9, 2, "SA", nil)
		},
		want:     []trace.Event{synEv(0, c6, s6, false), answerEv(2*ms, trace.KindSYNACK, c6, s6)},
		outcomes: []capture.Outcome{capture.Established},
	},
	{
		name: "linux cooked capture v1", link: layers.LinkTypeLinuxSLL,
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1, 0, "S", nil)
			b.tcp(2*ms, s1, c1, 0, 2, "RA", nil)
		},
		want:     []trace.Event{synEv(0, c1, s1, false), answerEv(2*ms, trace.KindRST, c1, s1)},
		outcomes: []capture.Outcome{capture.Reset},
	},
	{
		name: "raw ip", link: layers.LinkTypeRaw,
		build: func(b *builder) {
			b.tcp(0, c6, s6, 1, 0, "S", nil)
			b.tcp(ms, c1, s1, 1, 0, "S", nil)
		},
		want:     []trace.Event{synEv(0, c6, s6, false), synEv(ms, c1, s1, false)},
		outcomes: []capture.Outcome{capture.Unanswered, capture.Unanswered},
	},
	{
		name: "dns a and aaaa answered, one query unanswered", link: layers.LinkTypeEthernet,
		build: func(b *builder) {
			q := ap(client4, 33000)
			b.udp(0, q, dns4, dnsQueryMsg(b.tb, 7, "Svc.Conform.", dnsmessage.TypeAAAA))
			b.udp(ms/2, q, dns4, dnsQueryMsg(b.tb, 8, "svc.conform.", dnsmessage.TypeA))
			b.udp(ms, dns4, q, dnsAnswerMsg(b.tb, 7, "svc.conform.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, server6, netip.MustParseAddr("fd00:c0f:1::2")))
			b.udp(2*ms, dns4, q, dnsAnswerMsg(b.tb, 8, "svc.conform.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, server4))
			b.udp(3*ms, q, dns4, dnsQueryMsg(b.tb, 9, "gone.conform.", dnsmessage.TypeA))
			b.udp(4*ms, dns4, q, dnsAnswerMsg(b.tb, 10, "nx.conform.", dnsmessage.TypeA, dnsmessage.RCodeNameError))
			b.tcp(5*ms, c1, s1, 1, 0, "S", nil)
		},
		want: []trace.Event{
			dnsEv(ms, ap(client4, 33000), "AAAA svc.conform NOERROR fd00:c0f:1::1 fd00:c0f:1::2"),
			dnsEv(2*ms, ap(client4, 33000), "A svc.conform NOERROR 198.19.0.1"),
			dnsEv(3*ms, ap(client4, 33000), "A gone.conform unanswered"),
			dnsEv(4*ms, ap(client4, 33000), "A nx.conform NXDOMAIN"),
			synEv(5*ms, c1, s1, false),
		},
		outcomes: []capture.Outcome{capture.Unanswered},
	},
	{
		name: "client filter leaves out other hosts", link: layers.LinkTypeEthernet,
		opts: []Option{Client(client6)},
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1, 0, "S", nil)
			b.tcp(ms, s1, c1, 5, 2, "SA", nil)
			b.udp(2*ms, ap(client4, 33000), dns4, dnsQueryMsg(b.tb, 1, "x.conform.", dnsmessage.TypeA))
			b.tcp(3*ms, c6, s6, 1, 0, "S", nil)
			b.tcp(4*ms, s6, c6, 0, 2, "RA", nil)
		},
		want:     []trace.Event{synEv(3*ms, c6, s6, false), answerEv(4*ms, trace.KindRST, c6, s6)},
		outcomes: []capture.Outcome{capture.Reset},
	},
	{
		name: "rst of an established connection, and the client's own, is no attempt's fate", link: layers.LinkTypeEthernet,
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1, 0, "S", nil)
			b.tcp(ms, s1, c1, 5, 2, "SA", nil)
			b.tcp(2*ms, c1, s1, 2, 6, "RA", nil)
			b.tcp(3*ms, c2, s1, 1, 0, "S", nil)
			b.tcp(4*ms, s1, c2, 5, 2, "SA", nil)
			b.tcp(5*ms, s1, c2, 6, 2, "R", nil)
		},
		want: []trace.Event{synEv(0, c1, s1, false), answerEv(ms, trace.KindSYNACK, c1, s1),
			synEv(3*ms, c2, s1, false), answerEv(4*ms, trace.KindSYNACK, c2, s1)},
		outcomes: []capture.Outcome{capture.Established, capture.Established},
	},
	{
		name: "a syn seen again on a second interface is a copy", link: layers.LinkTypeLinuxSLL2,
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1, 0, "S", nil)
			b.ifidx = 3
			b.tcp(10*time.Microsecond, c1, s1, 1, 0, "S", nil)
			b.tcp(ms, s1, c1, 5, 2, "SA", nil)
			b.ifidx = 2
			b.tcp(ms+10*time.Microsecond, s1, c1, 5, 2, "SA", nil)
		},
		want:     []trace.Event{synEv(0, c1, s1, false), answerEv(ms, trace.KindSYNACK, c1, s1)},
		outcomes: []capture.Outcome{capture.Established},
	},
	{
		name: "since a given zero", link: layers.LinkTypeEthernet,
		opts: []Option{Since(t0.Add(-time.Second))},
		build: func(b *builder) {
			b.tcp(0, c1, s1, 1, 0, "S", nil)
		},
		want:     []trace.Event{synEv(time.Second, c1, s1, false)},
		outcomes: []capture.Outcome{capture.Unanswered},
	},
}

// formats are the two file formats every synthetic capture is read in.
var formats = []struct {
	name  string
	bytes func(b *builder) []byte
}{
	{"pcap", (*builder).pcap},
	{"pcapng", (*builder).pcapng},
}

// TestRead_Cases verifies each synthetic capture, in pcap and in pcapng,
// gives the events the lab would record and the attempts' outcomes.
func TestRead_Cases(t *testing.T) {
	for _, tc := range readCases {
		for _, f := range formats {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				b := newBuilder(t, tc.link)
				tc.build(b)
				c, err := Read("synthetic."+f.name, bytes.NewReader(f.bytes(b)), tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, c.Events, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.outcomes, outcomes(c.Attempts)); diff != "" {
					t.Errorf("attempt outcomes (-want +got):\n%s", diff)
				}
				if c.Format != f.name || c.Packets != len(b.frames) {
					t.Errorf("format %q, %d packets; want %q, %d", c.Format, c.Packets, f.name, len(b.frames))
				}
			})
		}
	}
}

func outcomes(as []capture.Attempt) []capture.Outcome {
	var out []capture.Outcome
	for _, a := range as {
		out = append(out, a.Outcome)
	}
	return out
}
