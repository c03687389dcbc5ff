package dns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The DNS message format of RFC 1035, section 4: as much of it as an
// authoritative server for A and AAAA records needs, written here so the lab
// has no DNS dependency. Names are in presentation form without the trailing
// dot ("svc.conform"; "" is the root); bytes that cannot appear bare are
// escaped as \DDD, and '.' and '\' inside a label as \. and \\ (RFC 4343).

// Type is a resource record type (RFC 1035 section 3.2.2, RFC 3596).
type Type uint16

// The record types the server knows by name.
const (
	TypeA     Type = 1
	TypeNS    Type = 2
	TypeCNAME Type = 5
	TypeSOA   Type = 6
	TypePTR   Type = 12
	TypeTXT   Type = 16
	TypeAAAA  Type = 28
	TypeSRV   Type = 33
	TypeOPT   Type = 41
	TypeANY   Type = 255
)

var typeNames = map[Type]string{TypeA: "A", TypeNS: "NS", TypeCNAME: "CNAME", TypeSOA: "SOA", TypePTR: "PTR",
	TypeTXT: "TXT", TypeAAAA: "AAAA", TypeSRV: "SRV", TypeOPT: "OPT", TypeANY: "ANY"}

// String is the type's mnemonic, or TYPEn (RFC 3597) for the others.
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return "TYPE" + strconv.Itoa(int(t))
}

// ClassINET is the Internet class, the only one the server answers.
const (
	ClassINET uint16 = 1
	ClassANY  uint16 = 255
)

// RCode is a response code (RFC 1035 section 4.1.1).
type RCode uint8

// The response codes the server sends.
const (
	RCodeSuccess  RCode = 0 // NOERROR; with no answer: NODATA (RFC 2308)
	RCodeFormErr  RCode = 1
	RCodeServFail RCode = 2
	RCodeNXDomain RCode = 3
	RCodeNotImp   RCode = 4
	RCodeRefused  RCode = 5
)

var rcodeNames = [...]string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"}

func (r RCode) String() string {
	if int(r) < len(rcodeNames) {
		return rcodeNames[r]
	}
	return "RCODE" + strconv.Itoa(int(r))
}

// Header is a message's fixed header, without the section counts (Pack
// derives them from the sections).
type Header struct {
	ID                 uint16
	Response           bool
	Opcode             uint8 // 0: standard query
	Authoritative      bool
	Truncated          bool
	RecursionDesired   bool
	RecursionAvailable bool
	RCode              RCode
}

// Question is one entry of the question section.
type Question struct {
	Name  string
	Type  Type
	Class uint16
}

// Resource is one resource record. Data is the record's RDATA as on the wire
// (4 bytes for A, 16 for AAAA); Pack writes it as it is.
type Resource struct {
	Name  string
	Type  Type
	Class uint16
	TTL   uint32
	Data  []byte
}

// Message is a DNS message.
type Message struct {
	Header
	Questions  []Question
	Answers    []Resource
	Authority  []Resource
	Additional []Resource
}

const (
	headerLen   = 12
	maxLabelLen = 63
	maxNameLen  = 255 // on the wire, length octets and the final zero included
	maxPointers = 64  // compression pointers followed in one name
)

// Flag bits of the header's second 16-bit word.
const (
	flagQR = 1 << 15
	flagAA = 1 << 10
	flagTC = 1 << 9
	flagRD = 1 << 8
	flagRA = 1 << 7
)

var errShort = errors.New("message too short")

// Pack encodes m. Owner names equal to the first question's name are written
// as a compression pointer to it (RFC 1035 section 4.1.4); other names are
// written in full.
func (m *Message) Pack() ([]byte, error) {
	for _, n := range []int{len(m.Questions), len(m.Answers), len(m.Authority), len(m.Additional)} {
		if n > 0xffff {
			return nil, fmt.Errorf("dns: %d records in one section", n)
		}
	}
	if m.Opcode > 15 || m.RCode > 15 {
		return nil, fmt.Errorf("dns: opcode %d or rcode %d does not fit the header", m.Opcode, m.RCode)
	}
	b := make([]byte, headerLen, 512)
	flags := uint16(m.Opcode)<<11 | uint16(m.RCode)
	for _, f := range []struct {
		set bool
		bit uint16
	}{{m.Response, flagQR}, {m.Authoritative, flagAA}, {m.Truncated, flagTC}, {m.RecursionDesired, flagRD}, {m.RecursionAvailable, flagRA}} {
		if f.set {
			flags |= f.bit
		}
	}
	binary.BigEndian.PutUint16(b[0:], m.ID)
	binary.BigEndian.PutUint16(b[2:], flags)
	binary.BigEndian.PutUint16(b[4:], uint16(len(m.Questions)))
	binary.BigEndian.PutUint16(b[6:], uint16(len(m.Answers)))
	binary.BigEndian.PutUint16(b[8:], uint16(len(m.Authority)))
	binary.BigEndian.PutUint16(b[10:], uint16(len(m.Additional)))
	first := ""
	var err error
	for i, q := range m.Questions {
		if i == 0 {
			first = strings.ToLower(q.Name)
		}
		if b, err = appendName(b, q.Name); err != nil {
			return nil, err
		}
		b = binary.BigEndian.AppendUint16(b, uint16(q.Type))
		b = binary.BigEndian.AppendUint16(b, q.Class)
	}
	for _, sec := range [][]Resource{m.Answers, m.Authority, m.Additional} {
		for _, r := range sec {
			if len(m.Questions) > 0 && strings.ToLower(r.Name) == first {
				b = append(b, 0xc0, headerLen) // the first question's name starts right after the header
			} else if b, err = appendName(b, r.Name); err != nil {
				return nil, err
			}
			if len(r.Data) > 0xffff {
				return nil, fmt.Errorf("dns: %s record of %d bytes", r.Type, len(r.Data))
			}
			b = binary.BigEndian.AppendUint16(b, uint16(r.Type))
			b = binary.BigEndian.AppendUint16(b, r.Class)
			b = binary.BigEndian.AppendUint32(b, r.TTL)
			b = binary.BigEndian.AppendUint16(b, uint16(len(r.Data)))
			b = append(b, r.Data...)
		}
	}
	return b, nil
}

// Unpack decodes a whole message; bytes after its last record are an error.
func Unpack(b []byte) (*Message, error) {
	h, counts, err := unpackHeader(b)
	if err != nil {
		return nil, err
	}
	m := &Message{Header: h}
	off := headerLen
	for range counts[0] {
		var q Question
		if q.Name, off, err = readName(b, off); err != nil {
			return nil, fmt.Errorf("dns: question %d: %w", len(m.Questions)+1, err)
		}
		if off+4 > len(b) {
			return nil, fmt.Errorf("dns: question %d: %w", len(m.Questions)+1, errShort)
		}
		q.Type = Type(binary.BigEndian.Uint16(b[off:]))
		q.Class = binary.BigEndian.Uint16(b[off+2:])
		off += 4
		m.Questions = append(m.Questions, q)
	}
	for s, sec := range []*[]Resource{&m.Answers, &m.Authority, &m.Additional} {
		for range counts[s+1] {
			var r Resource
			if r.Name, off, err = readName(b, off); err != nil {
				return nil, fmt.Errorf("dns: record %d of section %d: %w", len(*sec)+1, s+2, err)
			}
			if off+10 > len(b) {
				return nil, fmt.Errorf("dns: record %d of section %d: %w", len(*sec)+1, s+2, errShort)
			}
			r.Type = Type(binary.BigEndian.Uint16(b[off:]))
			r.Class = binary.BigEndian.Uint16(b[off+2:])
			r.TTL = binary.BigEndian.Uint32(b[off+4:])
			n := int(binary.BigEndian.Uint16(b[off+8:]))
			off += 10
			if off+n > len(b) {
				return nil, fmt.Errorf("dns: record %d of section %d: data: %w", len(*sec)+1, s+2, errShort)
			}
			r.Data = append([]byte(nil), b[off:off+n]...)
			off += n
			*sec = append(*sec, r)
		}
	}
	if off != len(b) {
		return nil, fmt.Errorf("dns: %d bytes after the last record", len(b)-off)
	}
	return m, nil
}

func unpackHeader(b []byte) (Header, [4]int, error) {
	var counts [4]int
	if len(b) < headerLen {
		return Header{}, counts, fmt.Errorf("dns: header: %w (%d bytes)", errShort, len(b))
	}
	flags := binary.BigEndian.Uint16(b[2:])
	h := Header{
		ID:                 binary.BigEndian.Uint16(b[0:]),
		Response:           flags&flagQR != 0,
		Opcode:             uint8(flags>>11) & 0xf,
		Authoritative:      flags&flagAA != 0,
		Truncated:          flags&flagTC != 0,
		RecursionDesired:   flags&flagRD != 0,
		RecursionAvailable: flags&flagRA != 0,
		RCode:              RCode(flags & 0xf),
	}
	for i := range counts {
		counts[i] = int(binary.BigEndian.Uint16(b[4+2*i:]))
	}
	return h, counts, nil
}

// readName reads the name at off, following compression pointers, and
// returns it with the offset just past it (past the first pointer, if any).
func readName(b []byte, off int) (string, int, error) {
	var sb strings.Builder
	end := -1 // where the name ends in the record, once a pointer was followed
	wire := 1 // the name's length on the wire: labels and the final zero
	for hops := 0; ; {
		if off >= len(b) {
			return "", 0, fmt.Errorf("name: %w", errShort)
		}
		n := int(b[off])
		switch n & 0xc0 {
		case 0x00:
		case 0xc0:
			if off+1 >= len(b) {
				return "", 0, fmt.Errorf("name: pointer: %w", errShort)
			}
			ptr := int(binary.BigEndian.Uint16(b[off:]) & 0x3fff)
			if end < 0 {
				end = off + 2
			}
			// Pointers only point backwards, which with the hop bound rules out loops.
			if hops++; ptr >= off || hops > maxPointers {
				return "", 0, fmt.Errorf("name: bad compression pointer %d at %d", ptr, off)
			}
			off = ptr
			continue
		default:
			return "", 0, fmt.Errorf("name: unsupported label type %#x at %d", n&0xc0, off)
		}
		off++
		if n == 0 {
			break
		}
		if off+n > len(b) {
			return "", 0, fmt.Errorf("name: label: %w", errShort)
		}
		if wire += 1 + n; wire > maxNameLen {
			return "", 0, fmt.Errorf("name longer than %d bytes", maxNameLen)
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		writeLabel(&sb, b[off:off+n])
		off += n
	}
	if end < 0 {
		end = off
	}
	return sb.String(), end, nil
}

func writeLabel(sb *strings.Builder, l []byte) {
	for _, c := range l {
		switch {
		case c == '.' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c < 0x21 || c > 0x7e:
			fmt.Fprintf(sb, "\\%03d", c)
		default:
			sb.WriteByte(c)
		}
	}
}

// appendName appends name in wire form, uncompressed.
func appendName(b []byte, name string) ([]byte, error) {
	labels, err := splitName(name)
	if err != nil {
		return nil, err
	}
	for _, l := range labels {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0), nil
}

// splitName parses a name in presentation form into its labels.
func splitName(name string) ([][]byte, error) {
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return nil, nil
	}
	var labels [][]byte
	var cur []byte
	wire := 1
	finish := func() error {
		if len(cur) == 0 {
			return fmt.Errorf("dns: name %q: empty label", name)
		}
		if len(cur) > maxLabelLen {
			return fmt.Errorf("dns: name %q: label longer than %d bytes", name, maxLabelLen)
		}
		if wire += 1 + len(cur); wire > maxNameLen {
			return fmt.Errorf("dns: name %q: longer than %d bytes", name, maxNameLen)
		}
		labels = append(labels, cur)
		cur = nil
		return nil
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '.':
			if err := finish(); err != nil {
				return nil, err
			}
		case '\\':
			if i+3 < len(name) && isDigit(name[i+1]) && isDigit(name[i+2]) && isDigit(name[i+3]) {
				v, _ := strconv.Atoi(name[i+1 : i+4])
				if v > 255 {
					return nil, fmt.Errorf("dns: name %q: escape \\%s out of range", name, name[i+1:i+4])
				}
				cur = append(cur, byte(v))
				i += 3
			} else if i+1 < len(name) {
				cur = append(cur, name[i+1])
				i++
			} else {
				return nil, fmt.Errorf("dns: name %q: trailing backslash", name)
			}
		default:
			cur = append(cur, c)
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return labels, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
