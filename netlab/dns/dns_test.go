package dns

import (
	"bytes"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// query packs a standard query for name and type.
func query(t *testing.T, id uint16, name string, typ Type) []byte {
	t.Helper()
	b, err := (&Message{Header: Header{ID: id, RecursionDesired: true},
		Questions: []Question{{Name: name, Type: typ, Class: ClassINET}}}).Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ask sends req to s as from a UDP client and decodes the reply.
func ask(t *testing.T, s *Server, req []byte) *Message {
	t.Helper()
	reply, ok := s.answer(req, "udp", netip.MustParseAddrPort("198.18.0.1:4242"), maxUDP)
	if !ok {
		t.Fatalf("no reply to %x", req)
	}
	m, err := Unpack(reply)
	if err != nil {
		t.Fatalf("Unpack(reply): %v", err)
	}
	return m
}

// TestWire_QueryBytes: a query packs to the bytes of RFC 1035's layout
// (checked by hand against dig's query for the same name).
func TestWire_QueryBytes(t *testing.T) {
	got := query(t, 0xbeef, "svc.conform", TypeAAAA)
	want := []byte{0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
		3, 's', 'v', 'c', 7, 'c', 'o', 'n', 'f', 'o', 'r', 'm', 0, 0, 28, 0, 1}
	if !bytes.Equal(got, want) {
		t.Fatalf("Pack = % x\nwant   % x", got, want)
	}
}

// TestWire_RoundTrip: every field survives Pack then Unpack, answer names
// being compressed to the question's.
func TestWire_RoundTrip(t *testing.T) {
	m := &Message{
		Header:     Header{ID: 7, Response: true, Opcode: 0, Authoritative: true, Truncated: true, RecursionDesired: true, RecursionAvailable: true, RCode: RCodeNXDomain},
		Questions:  []Question{{Name: "Svc.Conform", Type: TypeA, Class: ClassINET}},
		Answers:    []Resource{{Name: "svc.conform", Type: TypeA, Class: ClassINET, TTL: 30, Data: []byte{198, 19, 0, 1}}},
		Authority:  []Resource{{Name: "other.conform", Type: TypeAAAA, Class: ClassINET, TTL: 1, Data: netip.MustParseAddr("fd00:c0f::b:1").AsSlice()}},
		Additional: []Resource{{Name: "", Type: TypeOPT, Class: 1232}},
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte{0xc0, 12, 0, 1, 0, 1}) {
		t.Errorf("answer name not compressed to the question's: % x", b)
	}
	got, err := Unpack(b)
	if err != nil {
		t.Fatal(err)
	}
	// The compressed answer name reads back as the question's spelling.
	m.Answers[0].Name = "Svc.Conform"
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}
}

// TestWire_Names: escapes and limits of names in presentation form.
func TestWire_Names(t *testing.T) {
	for _, name := range []string{"", "a", "a.b.c", `we\.ird.x`, `sp\032ace`, strings.Repeat("a", 63) + ".b"} {
		b, err := appendName(nil, name)
		if err != nil {
			t.Errorf("appendName(%q): %v", name, err)
			continue
		}
		got, end, err := readName(b, 0)
		if err != nil || got != name || end != len(b) {
			t.Errorf("readName(appendName(%q)) = %q, %d, %v; want the name, %d", name, got, end, err, len(b))
		}
	}
	for _, name := range []string{"a..b", strings.Repeat("a", 64), strings.Repeat("abcdefg.", 32) + "x", `a\`, `\999`} {
		if _, err := appendName(nil, name); err == nil {
			t.Errorf("appendName(%q) succeeded, want an error", name)
		}
	}
}

// TestWire_UnpackRejects: truncated messages, pointer loops, forward
// pointers and trailing bytes are errors, not panics.
func TestWire_UnpackRejects(t *testing.T) {
	good := query(t, 1, "svc.conform", TypeA)
	loop := append(append([]byte{}, good[:12]...), 0xc0, 12, 0, 1, 0, 1)
	forward := append(append([]byte{}, good[:12]...), 0xc0, 20, 0, 1, 0, 1, 0, 0)
	for name, b := range map[string][]byte{
		"short header":   good[:11],
		"short question": good[:len(good)-1],
		"trailing bytes": append(append([]byte{}, good...), 0),
		"pointer loop":   loop,
		"forward ptr":    forward,
		"label type":     append(append([]byte{}, good[:12]...), 0x40, 0, 0, 1, 0, 1),
		"missing answer": func() []byte { b := append([]byte{}, good...); b[7] = 1; return b }(),
	} {
		if _, err := Unpack(b); err == nil {
			t.Errorf("%s: Unpack succeeded, want an error", name)
		}
	}
}

// FuzzUnpack: Unpack never panics, and what it accepts packs back to a
// message that unpacks to the same.
func FuzzUnpack(f *testing.F) {
	for _, n := range []string{"svc.conform", "a", ""} {
		b, _ := (&Message{Questions: []Question{{Name: n, Type: TypeA, Class: ClassINET}}}).Pack()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Unpack(b)
		if err != nil {
			return
		}
		p, err := m.Pack()
		if err != nil {
			return // names with labels a pointer assembled past 255 bytes, for example
		}
		m2, err := Unpack(p)
		if err != nil {
			t.Fatalf("Unpack(Pack(m)): %v", err)
		}
		if len(m2.Questions) != len(m.Questions) || len(m2.Answers) != len(m.Answers) || m2.Header != m.Header {
			t.Fatalf("round trip changed the message: %+v -> %+v", m, m2)
		}
	})
}

// TestServer_Answers: A and AAAA answered from the table per family and in
// the order set, ANY gets both, other types are NODATA, unknown names are
// NXDOMAIN, and the answer echoes the question's ID, case and RD bit.
func TestServer_Answers(t *testing.T) {
	s := New()
	v4a, v4b, v6 := netip.MustParseAddr("198.19.0.2"), netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("fd00:c0f::b:1")
	if err := s.Set("Svc.Conform.", []netip.Addr{v4a, v6, v4b}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("empty.conform", nil, time.Second); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		typ   Type
		rcode RCode
		addrs []netip.Addr
	}{
		{"svc.conform", TypeA, RCodeSuccess, []netip.Addr{v4a, v4b}},
		{"SVC.conform", TypeAAAA, RCodeSuccess, []netip.Addr{v6}},
		{"svc.conform", TypeANY, RCodeSuccess, []netip.Addr{v4a, v6, v4b}},
		{"svc.conform", TypeTXT, RCodeSuccess, nil},
		{"empty.conform", TypeA, RCodeSuccess, nil},
		{"_grpc_config.svc.conform", TypeTXT, RCodeNXDomain, nil},
		{"nope.conform", TypeA, RCodeNXDomain, nil},
	} {
		m := ask(t, s, query(t, 0x1234, c.name, c.typ))
		if m.ID != 0x1234 || !m.Response || !m.Authoritative || !m.RecursionDesired || m.RecursionAvailable || m.RCode != c.rcode {
			t.Errorf("%s %s: header %+v, want ID 0x1234, QR AA RD, rcode %s", c.name, c.typ, m.Header, c.rcode)
		}
		if len(m.Questions) != 1 || m.Questions[0].Name != c.name {
			t.Errorf("%s %s: question not echoed: %+v", c.name, c.typ, m.Questions)
		}
		var got []netip.Addr
		for _, r := range m.Answers {
			a, _ := netip.AddrFromSlice(r.Data)
			if r.TTL != 30 || r.Class != ClassINET || (r.Type == TypeA) != a.Is4() || r.Name != c.name {
				t.Errorf("%s %s: record %+v", c.name, c.typ, r)
			}
			got = append(got, a)
		}
		if !reflect.DeepEqual(got, c.addrs) {
			t.Errorf("%s %s: answers %v, want %v", c.name, c.typ, got, c.addrs)
		}
	}
}

// TestServer_Updates: Set replaces a name's records and Delete makes it
// NXDOMAIN, from the next query on.
func TestServer_Updates(t *testing.T) {
	s := New()
	a1, a2 := netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2")
	must(t, s.Set("svc.conform", []netip.Addr{a1}, 0))
	if m := ask(t, s, query(t, 1, "svc.conform", TypeA)); len(m.Answers) != 1 || !bytes.Equal(m.Answers[0].Data, a1.AsSlice()) || m.Answers[0].TTL != 0 {
		t.Fatalf("before the update: %+v", m.Answers)
	}
	must(t, s.Set("svc.conform", []netip.Addr{a2}, 5*time.Second))
	if m := ask(t, s, query(t, 2, "svc.conform", TypeA)); len(m.Answers) != 1 || !bytes.Equal(m.Answers[0].Data, a2.AsSlice()) || m.Answers[0].TTL != 5 {
		t.Fatalf("after the update: %+v", m.Answers)
	}
	must(t, s.Delete("svc.conform"))
	if m := ask(t, s, query(t, 3, "svc.conform", TypeA)); m.RCode != RCodeNXDomain {
		t.Fatalf("after Delete: %s, want NXDOMAIN", m.RCode)
	}
}

// TestServer_SetRejects: names and values that cannot be records.
func TestServer_SetRejects(t *testing.T) {
	s := New()
	ok := []netip.Addr{netip.MustParseAddr("198.19.0.1")}
	for name, err := range map[string]error{
		"empty name":    s.Set("", ok, 0),
		"empty label":   s.Set("a..b", ok, 0),
		"bad character": s.Set("a b.conform", ok, 0),
		"long label":    s.Set(strings.Repeat("x", 64)+".conform", ok, 0),
		"negative TTL":  s.Set("a.conform", ok, -time.Second),
		"huge TTL":      s.Set("a.conform", ok, 1<<31*time.Second),
		"zoned address": s.Set("a.conform", []netip.Addr{netip.MustParseAddr("fe80::1%eth0")}, 0),
		"invalid addr":  s.Set("a.conform", []netip.Addr{{}}, 0),
	} {
		if err == nil {
			t.Errorf("%s: Set succeeded, want an error", name)
		}
	}
	if _, found := s.Lookup("a.conform"); found {
		t.Errorf("a rejected Set changed the table")
	}
}

// TestServer_Malformed: a message too short for an ID, or a reply, gets no
// answer; a broken question FORMERR; an opcode other than QUERY NOTIMP; a
// class other than IN REFUSED. Every query answered is reported.
func TestServer_Malformed(t *testing.T) {
	var seen []Query
	s := New(WithOnQuery(func(q Query) { seen = append(seen, q) }))
	must(t, s.Set("svc.conform", []netip.Addr{netip.MustParseAddr("198.19.0.1")}, 0))
	from := netip.MustParseAddrPort("198.18.0.1:1")
	if _, ok := s.answer([]byte{1, 2, 3}, "udp", from, maxUDP); ok {
		t.Error("answered an 3-byte message")
	}
	reply := query(t, 1, "svc.conform", TypeA)
	reply[2] |= 0x80
	if _, ok := s.answer(reply, "udp", from, maxUDP); ok {
		t.Error("answered a reply")
	}
	good := query(t, 9, "svc.conform", TypeA)
	if m := ask(t, s, good[:len(good)-2]); m.RCode != RCodeFormErr || m.ID != 9 || len(m.Questions) != 0 {
		t.Errorf("truncated question: %+v, want FORMERR with ID 9", m)
	}
	two, _ := (&Message{Header: Header{ID: 2}, Questions: []Question{{"a", TypeA, ClassINET}, {"b", TypeA, ClassINET}}}).Pack()
	if m := ask(t, s, two); m.RCode != RCodeFormErr {
		t.Errorf("two questions: %s, want FORMERR", m.RCode)
	}
	notify, _ := (&Message{Header: Header{ID: 3, Opcode: 4}, Questions: []Question{{"svc.conform", TypeSOA, ClassINET}}}).Pack()
	if m := ask(t, s, notify); m.RCode != RCodeNotImp {
		t.Errorf("NOTIFY: %s, want NOTIMP", m.RCode)
	}
	chaos, _ := (&Message{Header: Header{ID: 4}, Questions: []Question{{"svc.conform", TypeA, 3}}}).Pack()
	if m := ask(t, s, chaos); m.RCode != RCodeRefused || len(m.Answers) != 0 {
		t.Errorf("class CH: %s, want REFUSED", m.RCode)
	}
	if len(seen) != 4 || len(s.Queries()) != 4 {
		t.Fatalf("reported %d queries (Queries: %d), want 4: %v", len(seen), len(s.Queries()), seen)
	}
	if seen[0].RCode != RCodeFormErr || seen[0].Name != "" || seen[0].From != netip.MustParseAddrPort("198.18.0.1:4242") || seen[0].ID != 9 {
		t.Errorf("first report %+v", seen[0])
	}
	if seen[3].Name != "svc.conform" || seen[3].Type != TypeA || seen[3].RCode != RCodeRefused {
		t.Errorf("last report %+v", seen[3])
	}
}

// TestServer_TruncatesLongUDPAnswers: an answer over 512 bytes goes out over
// UDP with TC set and no records, and whole over TCP (no limit).
func TestServer_TruncatesLongUDPAnswers(t *testing.T) {
	s := New()
	var addrs []netip.Addr
	for i := range 20 {
		addrs = append(addrs, netip.AddrFrom16([16]byte{0xfd, 0, 0x0c, 0x0f, 15: byte(i + 1)}))
	}
	must(t, s.Set("many.conform", addrs, 0))
	req := query(t, 5, "many.conform", TypeAAAA)
	m := ask(t, s, req)
	if !m.Truncated || len(m.Answers) != 0 || m.RCode != RCodeSuccess {
		t.Errorf("UDP: TC %v, %d answers, %s; want TC, none, NOERROR", m.Truncated, len(m.Answers), m.RCode)
	}
	reply, _ := s.answer(req, "tcp", netip.MustParseAddrPort("198.18.0.1:2"), 0)
	if m, err := Unpack(reply); err != nil || m.Truncated || len(m.Answers) != 20 {
		t.Errorf("TCP: %v %+v, want 20 answers", err, m)
	}
	if q := s.Queries(); len(q) != 2 || !q[0].Trunc || q[1].Trunc || q[1].Answers != 20 || q[1].Net != "tcp" {
		t.Errorf("queries %v", q)
	}
}

// TestServer_Clock: queries are stamped with the injected clock.
func TestServer_Clock(t *testing.T) {
	s := New(WithClock(func() time.Duration { return 42 * time.Millisecond }))
	ask(t, s, query(t, 1, "x.conform", TypeA))
	if q := s.Queries(); len(q) != 1 || q[0].T != 42*time.Millisecond {
		t.Errorf("queries %v, want one at 42ms", q)
	}
}

func TestTarget(t *testing.T) {
	if got, want := Target("svc.conform", 50051), "dns://198.18.255.53:53/svc.conform:50051"; got != want {
		t.Errorf("Target = %q, want %q", got, want)
	}
	if rc := string(ResolvConf()); !strings.Contains(rc, "nameserver 198.18.255.53\n") || !strings.Contains(rc, "nameserver fd00:c0f::d:53\n") {
		t.Errorf("ResolvConf:\n%s", rc)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
