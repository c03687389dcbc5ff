package dns

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// query packs a standard query (RD set, class IN) for name ("" is the root)
// and type.
func query(t testing.TB, id uint16, name string, typ Type) []byte {
	t.Helper()
	return pack(t, dnsmessage.Header{ID: id, RecursionDesired: true},
		dnsmessage.Question{Name: mustName(t, name), Type: dnsmessage.Type(typ), Class: dnsmessage.ClassINET})
}

// pack packs a message with header h and questions qs.
func pack(t testing.TB, h dnsmessage.Header, qs ...dnsmessage.Question) []byte {
	t.Helper()
	b, err := (&dnsmessage.Message{Header: h, Questions: qs}).Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustName(t testing.TB, name string) dnsmessage.Name {
	t.Helper()
	n, err := dnsmessage.NewName(name + ".")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rawQuery is a query for an A record of the name made of labels, written
// byte by byte, for names dnsmessage would not pack.
func rawQuery(id uint16, labels ...string) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD; one question
	for _, l := range labels {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0, 0, 1, 0, 1)
}

// ask sends req to s as from a UDP client and decodes the reply.
func ask(t *testing.T, s *Server, req []byte) *dnsmessage.Message {
	t.Helper()
	reply, ok := s.answer(req, "udp", netip.MustParseAddrPort("198.18.0.1:4242"), maxUDP)
	if !ok {
		t.Fatalf("no reply to %x", req)
	}
	var m dnsmessage.Message
	if err := m.Unpack(reply); err != nil {
		t.Fatalf("Unpack(reply): %v", err)
	}
	return &m
}

// answerAddrs are the addresses of m's A and AAAA answers, in order.
func answerAddrs(m *dnsmessage.Message) []netip.Addr {
	var addrs []netip.Addr
	for _, r := range m.Answers {
		switch b := r.Body.(type) {
		case *dnsmessage.AResource:
			addrs = append(addrs, netip.AddrFrom4(b.A))
		case *dnsmessage.AAAAResource:
			addrs = append(addrs, netip.AddrFrom16(b.AAAA))
		}
	}
	return addrs
}

// TestServer_ReplyBytes: the reply to an A query is RFC 1035's layout, byte
// for byte (recorded from the hand-written encoder this package had before
// dnsmessage, and checked by hand): QR AA RD, the question echoed, each
// answer's name a pointer to the question's (0xc00c), TTL 30.
func TestServer_ReplyBytes(t *testing.T) {
	s := New()
	must(t, s.Set("svc.conform", []netip.Addr{netip.MustParseAddr("198.19.0.2"), netip.MustParseAddr("fd00:c0f::b:1"),
		netip.MustParseAddr("198.19.0.1")}, 30*time.Second))
	got, _ := s.answer(query(t, 0x1234, "svc.conform", TypeA), "udp", netip.MustParseAddrPort("198.18.0.1:1"), maxUDP)
	want := []byte{0x12, 0x34, 0x85, 0x00, 0, 1, 0, 2, 0, 0, 0, 0,
		3, 's', 'v', 'c', 7, 'c', 'o', 'n', 'f', 'o', 'r', 'm', 0, 0, 1, 0, 1,
		0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 198, 19, 0, 2,
		0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 198, 19, 0, 1}
	if !bytes.Equal(got, want) {
		t.Fatalf("reply % x\nwant  % x", got, want)
	}
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
		if m.ID != 0x1234 || !m.Response || !m.Authoritative || !m.RecursionDesired || m.RecursionAvailable || RCode(m.RCode) != c.rcode {
			t.Errorf("%s %s: header %+v, want ID 0x1234, QR AA RD, rcode %s", c.name, c.typ, m.Header, c.rcode)
		}
		if len(m.Questions) != 1 || m.Questions[0].Name.String() != c.name+"." {
			t.Errorf("%s %s: question not echoed: %+v", c.name, c.typ, m.Questions)
		}
		for _, r := range m.Answers {
			h := r.Header
			if h.TTL != 30 || h.Class != dnsmessage.ClassINET || h.Name.String() != c.name+"." {
				t.Errorf("%s %s: record %+v", c.name, c.typ, h)
			}
		}
		if got := answerAddrs(m); !reflect.DeepEqual(got, c.addrs) || len(m.Answers) != len(c.addrs) {
			t.Errorf("%s %s: answers %v (%d records), want %v", c.name, c.typ, got, len(m.Answers), c.addrs)
		}
	}
}

// TestServer_Updates: Set replaces a name's records and Delete makes it
// NXDOMAIN, from the next query on.
func TestServer_Updates(t *testing.T) {
	s := New()
	a1, a2 := netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("198.19.0.2")
	must(t, s.Set("svc.conform", []netip.Addr{a1}, 0))
	if m := ask(t, s, query(t, 1, "svc.conform", TypeA)); !reflect.DeepEqual(answerAddrs(m), []netip.Addr{a1}) || m.Answers[0].Header.TTL != 0 {
		t.Fatalf("before the update: %+v", m.Answers)
	}
	must(t, s.Set("svc.conform", []netip.Addr{a2}, 5*time.Second))
	if m := ask(t, s, query(t, 2, "svc.conform", TypeA)); !reflect.DeepEqual(answerAddrs(m), []netip.Addr{a2}) || m.Answers[0].Header.TTL != 5 {
		t.Fatalf("after the update: %+v", m.Answers)
	}
	must(t, s.Delete("svc.conform"))
	if m := ask(t, s, query(t, 3, "svc.conform", TypeA)); RCode(m.RCode) != RCodeNXDomain {
		t.Fatalf("after Delete: %s, want NXDOMAIN", RCode(m.RCode))
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

// TestServer_QueryNames: the name a query asks for is reported lower-cased,
// without the trailing dot ("" for the root), '\' and bytes that cannot
// appear bare escaped (RFC 4343); a 63-byte label and a name of 255 bytes on
// the wire are read, a name one byte longer is FORMERR, and so is a '.'
// inside a label (dnsmessage refuses it).
func TestServer_QueryNames(t *testing.T) {
	long := []string{strings.Repeat("a", 63), strings.Repeat("b", 63), strings.Repeat("c", 63), strings.Repeat("d", 61)}
	for _, c := range []struct {
		req   []byte
		name  string
		rcode RCode
	}{
		{query(t, 1, "Svc.CONFORM", TypeA), "svc.conform", RCodeNXDomain},
		{query(t, 1, "", TypeA), "", RCodeNXDomain},
		{rawQuery(1, "sp ace", "X"), `sp\032ace.x`, RCodeNXDomain},
		{rawQuery(1, `back\slash`, "x"), `back\\slash.x`, RCodeNXDomain},
		{rawQuery(1, "\xff\x00", "x"), `\255\000.x`, RCodeNXDomain},
		{rawQuery(1, strings.Repeat("a", 63), "x"), strings.Repeat("a", 63) + ".x", RCodeNXDomain},
		{rawQuery(1, long...), strings.Join(long, "."), RCodeNXDomain},
		{rawQuery(1, append(long[:3:3], strings.Repeat("d", 62))...), "", RCodeFormErr},
		{rawQuery(1, "we.ird", "x"), "", RCodeFormErr},
	} {
		var seen []Query
		s := New(WithOnQuery(func(q Query) { seen = append(seen, q) }))
		if m := ask(t, s, c.req); RCode(m.RCode) != c.rcode || len(seen) != 1 || seen[0].Name != c.name {
			t.Errorf("% x: %s, reported %v; want %s for %q", c.req, RCode(m.RCode), seen, c.rcode, c.name)
		}
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
	if m := ask(t, s, good[:len(good)-2]); RCode(m.RCode) != RCodeFormErr || m.ID != 9 || len(m.Questions) != 0 {
		t.Errorf("truncated question: %+v, want FORMERR with ID 9", m)
	}
	q := func(name string, typ dnsmessage.Type, class dnsmessage.Class) dnsmessage.Question {
		return dnsmessage.Question{Name: mustName(t, name), Type: typ, Class: class}
	}
	two := pack(t, dnsmessage.Header{ID: 2}, q("a", dnsmessage.TypeA, dnsmessage.ClassINET), q("b", dnsmessage.TypeA, dnsmessage.ClassINET))
	if m := ask(t, s, two); RCode(m.RCode) != RCodeFormErr {
		t.Errorf("two questions: %s, want FORMERR", RCode(m.RCode))
	}
	notify := pack(t, dnsmessage.Header{ID: 3, OpCode: 4}, q("svc.conform", dnsmessage.TypeSOA, dnsmessage.ClassINET))
	if m := ask(t, s, notify); RCode(m.RCode) != RCodeNotImp {
		t.Errorf("NOTIFY: %s, want NOTIMP", RCode(m.RCode))
	}
	chaos := pack(t, dnsmessage.Header{ID: 4}, q("svc.conform", dnsmessage.TypeA, dnsmessage.ClassCHAOS))
	if m := ask(t, s, chaos); RCode(m.RCode) != RCodeRefused || len(m.Answers) != 0 {
		t.Errorf("class CH: %s, want REFUSED", RCode(m.RCode))
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

// TestReadQuery_SaysWhatIsMalformed: truncated messages, pointer loops,
// reserved label types, missing records and trailing bytes are FORMERR, and
// the error (logged at debug level) names the part that is broken.
func TestReadQuery_SaysWhatIsMalformed(t *testing.T) {
	good := query(t, 1, "svc.conform", TypeA)
	withHeader := func(body ...byte) []byte { return append(append([]byte{}, good[:12]...), body...) }
	oneAnswer := func(b []byte) []byte { b[7] = 1; return b } // ANCOUNT 1
	for name, c := range map[string]struct {
		msg  []byte
		want string
	}{
		"short question": {good[:len(good)-1], "question 1: unpacking Question.Class"},
		"trailing bytes": {append(append([]byte{}, good...), 0), "bytes after the last record"},
		"pointer loop":   {withHeader(0xc0, 12, 0, 1, 0, 1), "question 1: unpacking Question.Name: too many pointers"},
		"pointer past":   {withHeader(0xc0, 20, 0, 1, 0, 1, 0, 0), "question 1: unpacking Question.Name"},
		"label type":     {withHeader(0x40, 0, 0, 1, 0, 1), "question 1: unpacking Question.Name: segment prefix is reserved"},
		"missing answer": {oneAnswer(withHeader(good[12:]...)), "answer record 1"},
		"short record":   {oneAnswer(append(withHeader(good[12:]...), 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 1, 2, 3)), "answer record 1"},
	} {
		var p dnsmessage.Parser
		if _, err := p.Start(c.msg); err != nil {
			t.Fatalf("%s: header: %v", name, err)
		}
		_, err := readQuery(&p, c.msg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bytes") {
			t.Errorf("%s: readQuery = %v, want an error saying %q and the message's size", name, err, c.want)
		}
		s := New()
		if m := ask(t, s, c.msg); RCode(m.RCode) != RCodeFormErr {
			t.Errorf("%s: answered %s, want FORMERR", name, RCode(m.RCode))
		}
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
	if !m.Truncated || len(m.Answers) != 0 || RCode(m.RCode) != RCodeSuccess {
		t.Errorf("UDP: TC %v, %d answers, %s; want TC, none, NOERROR", m.Truncated, len(m.Answers), RCode(m.RCode))
	}
	reply, _ := s.answer(req, "tcp", netip.MustParseAddrPort("198.18.0.1:2"), 0)
	var tcp dnsmessage.Message
	if err := tcp.Unpack(reply); err != nil || tcp.Truncated || !reflect.DeepEqual(answerAddrs(&tcp), addrs) {
		t.Errorf("TCP: %v %+v, want the 20 answers", err, tcp)
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

// TestQuery_Strings: types and response codes are reported by their RFC
// mnemonics, as trace events carry them ("A svc.conform NOERROR").
func TestQuery_Strings(t *testing.T) {
	for got, want := range map[string]string{
		TypeA.String(): "A", TypeAAAA.String(): "AAAA", TypeANY.String(): "ANY", TypeTXT.String(): "TXT",
		TypeSRV.String(): "SRV", Type(0).String(): "TYPE0", Type(65).String(): "TYPE65",
		RCodeSuccess.String(): "NOERROR", RCodeFormErr.String(): "FORMERR", RCodeServFail.String(): "SERVFAIL",
		RCodeNXDomain.String(): "NXDOMAIN", RCodeNotImp.String(): "NOTIMP", RCodeRefused.String(): "REFUSED",
		RCode(9).String(): "RCODE9",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// FuzzAnswer: whatever arrives, the server does not panic; what it sends
// is a whole response to the query's ID that dnsmessage reads back, fits a
// UDP message, and matches the query it reported (rcode, answer count,
// truncation); a reported name is in the server's lower-case form, and a
// NOERROR one is in the table.
func FuzzAnswer(f *testing.F) {
	for _, b := range [][]byte{
		query(f, 1, "svc.conform", TypeA), query(f, 2, "svc.conform", TypeAAAA), query(f, 3, "many.conform", TypeANY),
		query(f, 4, "nope.conform", TypeA), query(f, 5, "", TypeA), rawQuery(6, "we.ird", "x"),
		append(query(f, 7, "svc.conform", TypeA), 0), {1, 2, 3},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		var seen *Query
		s := fuzzServer(t, func(q Query) { seen = &q })
		reply, ok := s.answer(req, "udp", netip.MustParseAddrPort("198.18.0.1:1"), maxUDP)
		if !ok {
			if seen != nil {
				t.Fatalf("no reply, yet reported %v", *seen)
			}
			return
		}
		checkReply(t, s, req, reply, seen)
	})
}

// fuzzServer is a server for FuzzAnswer, one per input so that its record
// of queries stays small: svc.conform has an address of each family,
// many.conform more IPv4 ones than a UDP answer holds.
func fuzzServer(t *testing.T, onQuery func(Query)) *Server {
	s := New(WithOnQuery(onQuery))
	must(t, s.Set("svc.conform", []netip.Addr{netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("fd00:c0f::b:1")}, time.Second))
	var many []netip.Addr
	for i := range 40 {
		many = append(many, netip.AddrFrom4([4]byte{198, 19, 1, byte(i)}))
	}
	must(t, s.Set("many.conform", many, time.Second))
	return s
}

// checkReply checks FuzzAnswer's properties of one reply.
func checkReply(t *testing.T, s *Server, req, reply []byte, q *Query) {
	var m dnsmessage.Message
	if err := m.Unpack(reply); err != nil {
		t.Fatalf("reply % x does not read back: %v", reply, err)
	}
	if q == nil || !m.Response || m.ID != binary.BigEndian.Uint16(req) || len(reply) > maxUDP {
		t.Fatalf("reply %+v (%d bytes) to % x, reported %v", m.Header, len(reply), req, q)
	}
	if RCode(m.RCode) != q.RCode || len(m.Answers) != q.Answers || m.Truncated != q.Trunc {
		t.Fatalf("reply %+v with %d answers, reported %v", m.Header, len(m.Answers), *q)
	}
	if q.Name != strings.ToLower(q.Name) {
		t.Fatalf("reported name %q is not lower-case", q.Name)
	}
	if _, found := s.Lookup(q.Name); q.RCode == RCodeSuccess && !found {
		t.Fatalf("NOERROR for %q, which is not in the table", q.Name)
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
