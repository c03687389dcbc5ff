package pcap

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/dns"
)

// dnsPort is DNS's UDP port.
const dnsPort = 53

// dnsKey names a query by the addresses it went between and its ID.
type dnsKey struct {
	client, server netip.AddrPort
	id             uint16
}

// dnsQuery is a query not answered yet.
type dnsQuery struct {
	at    time.Time
	q     dnsmessage.Question
	order int // queries in the order they were sent, for the end
}

// datagram handles a UDP datagram to or from port 53: a client's query is
// kept until its response, which becomes a dns-query event.
func (r *reader) datagram(f *frame, pk packet) {
	if pk.missing > 0 {
		r.tally("dns", f, "DNS messages could not be read", "the capture cut it short (snap length)")
		return
	}
	var p dnsmessage.Parser
	h, err := p.Start(pk.payload)
	if err != nil {
		r.tally("dns", f, "DNS messages could not be read", err.Error())
		return
	}
	q, err := p.Question()
	if err != nil {
		r.tally("dns", f, "DNS messages could not be read", "question: "+err.Error())
		return
	}
	switch {
	case !h.Response && pk.dst.Port() == dnsPort && r.asks(pk.src.Addr()):
		k := dnsKey{pk.src, pk.dst, h.ID}
		if _, ok := r.dns[k]; !ok {
			r.dnsSent++
			r.dns[k] = dnsQuery{at: f.at, q: q, order: r.dnsSent}
		}
	case h.Response && pk.src.Port() == dnsPort && r.asks(pk.dst.Addr()):
		delete(r.dns, dnsKey{pk.dst, pk.src, h.ID})
		addrs, err := answers(&p)
		if err != nil {
			r.tally("dns", f, "DNS messages could not be read", "answer: "+err.Error())
		}
		r.emit(f.at, dnsEvent(pk.dst, q, dns.RCode(h.RCode).String(), addrs))
	}
}

// asks reports whether a DNS query from a is the client's: any, unless
// Client names the clients.
func (r *reader) asks(a netip.Addr) bool {
	return r.cfg.clients == nil || r.cfg.clients[a.Unmap()]
}

// answers reads the A and AAAA addresses of a response's answer section,
// in order (CNAMEs and other records are skipped).
func answers(p *dnsmessage.Parser) ([]string, error) {
	if err := p.SkipAllQuestions(); err != nil {
		return nil, err
	}
	var addrs []string
	for {
		h, err := p.AnswerHeader()
		if err == dnsmessage.ErrSectionDone {
			return addrs, nil
		}
		if err != nil {
			return addrs, err
		}
		switch h.Type {
		case dnsmessage.TypeA:
			a, err := p.AResource()
			if err != nil {
				return addrs, err
			}
			addrs = append(addrs, netip.AddrFrom4(a.A).String())
		case dnsmessage.TypeAAAA:
			a, err := p.AAAAResource()
			if err != nil {
				return addrs, err
			}
			addrs = append(addrs, netip.AddrFrom16(a.AAAA).String())
		default:
			if err := p.SkipAnswer(); err != nil {
				return addrs, err
			}
		}
	}
}

// dnsEvent is a dns-query event as the lab writes it (Detail "TYPE name
// RCODE", names lower-case without the final dot), with the answer's
// addresses after the code.
func dnsEvent(client netip.AddrPort, q dnsmessage.Question, rcode string, addrs []string) trace.Event {
	detail := fmt.Sprintf("%s %s %s", dns.Type(q.Type), dnsName(q.Name), rcode)
	if len(addrs) > 0 {
		detail += " " + strings.Join(addrs, " ")
	}
	return trace.Event{Source: trace.SourceHarness, Kind: trace.KindDNSQuery, Peer: client.String(), Detail: detail}
}

// unanswered is the rcode word of a query the capture shows no response to.
const unanswered = "unanswered"

// endDNS emits the queries never answered, at the time they were sent.
func (r *reader) endDNS() {
	keys := slices.SortedFunc(maps.Keys(r.dns), func(a, b dnsKey) int { return r.dns[a].order - r.dns[b].order })
	for _, k := range keys {
		q := r.dns[k]
		r.emit(q.at, dnsEvent(k.client, q.q, unanswered, nil))
	}
}

// dnsName spells a name as the lab's DNS reports it: lower-case, without
// the final dot, bytes outside printable ASCII as \DDD.
func dnsName(n dnsmessage.Name) string {
	s := strings.TrimSuffix(n.String(), ".")
	var sb strings.Builder
	for _, c := range []byte(strings.ToLower(s)) {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c < 0x21 || c > 0x7e:
			fmt.Fprintf(&sb, "\\%03d", c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}
