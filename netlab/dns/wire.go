package dns

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// The DNS message format of RFC 1035, section 4, is
// golang.org/x/net/dns/dnsmessage's. This file adds what the server needs
// around it: the names queries are reported by (RFC mnemonics, as dig
// prints them), reading a query whole, and writing the reply.

// Type is a resource record type (RFC 1035 section 3.2.2, RFC 3596).
type Type uint16

// The record types the server knows by name.
const (
	TypeA     = Type(dnsmessage.TypeA)
	TypeNS    = Type(dnsmessage.TypeNS)
	TypeCNAME = Type(dnsmessage.TypeCNAME)
	TypeSOA   = Type(dnsmessage.TypeSOA)
	TypePTR   = Type(dnsmessage.TypePTR)
	TypeTXT   = Type(dnsmessage.TypeTXT)
	TypeAAAA  = Type(dnsmessage.TypeAAAA)
	TypeSRV   = Type(dnsmessage.TypeSRV)
	TypeOPT   = Type(dnsmessage.TypeOPT)
	TypeANY   = Type(dnsmessage.TypeALL)
)

var typeNames = map[Type]string{TypeA: "A", TypeNS: "NS", TypeCNAME: "CNAME", TypeSOA: "SOA", TypePTR: "PTR",
	TypeTXT: "TXT", TypeAAAA: "AAAA", TypeSRV: "SRV", TypeOPT: "OPT", TypeANY: "ANY"}

// String is the type's mnemonic, or TYPEn (RFC 3597) for the others.
// (dnsmessage's own String gives Go names, "TypeAAAA"; trace events carry
// these.)
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return "TYPE" + strconv.Itoa(int(t))
}

// RCode is a response code (RFC 1035 section 4.1.1).
type RCode uint8

// The response codes the server sends.
const (
	RCodeSuccess  = RCode(dnsmessage.RCodeSuccess) // NOERROR; with no answer: NODATA (RFC 2308)
	RCodeFormErr  = RCode(dnsmessage.RCodeFormatError)
	RCodeServFail = RCode(dnsmessage.RCodeServerFailure)
	RCodeNXDomain = RCode(dnsmessage.RCodeNameError)
	RCodeNotImp   = RCode(dnsmessage.RCodeNotImplemented)
	RCodeRefused  = RCode(dnsmessage.RCodeRefused)
)

var rcodeNames = [...]string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"}

// String is the code's name as dig prints it, or RCODEn for the others.
func (r RCode) String() string {
	if int(r) < len(rcodeNames) {
		return rcodeNames[r]
	}
	return "RCODE" + strconv.Itoa(int(r))
}

// readQuery reads the rest of a query whose header p has read: its
// questions, and the owner name and data length of every other record
// (their data is not looked at), so that a malformed message anywhere is a
// FORMERR. The error names the part that is malformed.
func readQuery(p *dnsmessage.Parser, req []byte) ([]dnsmessage.Question, error) {
	qs, err := readSections(p)
	if err != nil {
		return nil, fmt.Errorf("dns: query of %d bytes: %w", len(req), err)
	}
	// dnsmessage does not say where the message ended. A message read whole
	// needs its last byte (its last item ends there), so one that still
	// reads whole without it has bytes after its last record.
	var short dnsmessage.Parser
	if _, err := short.Start(req[:len(req)-1]); err == nil {
		if _, err := readSections(&short); err == nil {
			return nil, fmt.Errorf("dns: query of %d bytes: bytes after the last record", len(req))
		}
	}
	return qs, nil
}

// readSections reads every section after the header; the error says which
// question or record is malformed, numbered from 1.
func readSections(p *dnsmessage.Parser) ([]dnsmessage.Question, error) {
	var qs []dnsmessage.Question
	for {
		q, err := p.Question()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("question %d: %w", len(qs)+1, err)
		}
		qs = append(qs, q)
	}
	sections := []struct {
		name   string
		header func() (dnsmessage.ResourceHeader, error)
		skip   func() error
	}{
		{"answer", p.AnswerHeader, p.SkipAnswer},
		{"authority", p.AuthorityHeader, p.SkipAuthority},
		{"additional", p.AdditionalHeader, p.SkipAdditional},
	}
	for _, sec := range sections {
		for i := 1; ; i++ {
			_, err := sec.header()
			if errors.Is(err, dnsmessage.ErrSectionDone) {
				break
			}
			if err == nil {
				err = sec.skip()
			}
			if err != nil {
				return nil, fmt.Errorf("%s record %d: %w", sec.name, i, err)
			}
		}
	}
	return qs, nil
}

// nameString is a name as the server reports and looks it up: without the
// trailing dot ("" for the root), '\' escaped as \\ and bytes that cannot
// appear bare as \DDD (RFC 4343). dnsmessage has no escaping of its own
// and refuses a '.' inside a label, so every '.' separates labels.
func nameString(n dnsmessage.Name) string {
	s := strings.TrimSuffix(n.String(), ".")
	var sb strings.Builder
	for _, c := range []byte(s) {
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

// reply is an answer being made: its header, the question it echoes (none
// for a message without exactly one) and the addresses it answers with,
// IPv4 ones as A records and IPv6 ones as AAAA, all with one TTL.
type reply struct {
	header   dnsmessage.Header
	question *dnsmessage.Question
	addrs    []netip.Addr
	ttl      uint32
}

// pack encodes r. Answer owner names are the question's name, written as a
// compression pointer to it (RFC 1035 section 4.1.4).
func (r *reply) pack() ([]byte, error) {
	b := dnsmessage.NewBuilder(nil, r.header)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if r.question != nil {
		if err := b.Question(*r.question); err != nil {
			return nil, err
		}
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, a := range r.addrs {
		h := dnsmessage.ResourceHeader{Name: r.question.Name, Class: dnsmessage.ClassINET, TTL: r.ttl}
		var err error
		if a.Is4() {
			err = b.AResource(h, dnsmessage.AResource{A: a.As4()})
		} else {
			err = b.AAAAResource(h, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
