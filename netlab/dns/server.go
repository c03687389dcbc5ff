// Package dns is the lab's DNS service: a small authoritative server for the
// scenario names a run uses, answering A and AAAA queries (and NXDOMAIN or
// NODATA for the rest) over UDP and TCP from a table the harness changes at
// run time, and reporting every query it receives, so that a client's
// re-resolution is visible whatever the client is.
//
// DESIGN.md: anything that resolves names runs as a child process in the
// client namespace. The server is opened inside that namespace (ListenIn), on
// the service addresses ServiceAddrV4 and ServiceAddrV6, which it adds to the
// namespace's loopback; it never touches the root namespace nor the
// machine's /etc/resolv.conf. Clients are pointed at it by a target with an
// authority (Target: "dns://198.18.255.53:53/svc.conform:50051", which
// C-core's c-ares resolver honours) or by a resolv.conf of their own
// (ResolvConf, WriteResolverFiles, WithLabResolver).
//
// Messages are read and written with golang.org/x/net/dns/dnsmessage
// (wire.go); serving (serve.go) and the table are the package's own, so that
// every query is reported, malformed ones included.
package dns

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Query is one query the server received, and what it answered.
type Query struct {
	T       time.Duration  // when it arrived, on the server's clock (see WithClock)
	Net     string         // "udp" or "tcp"
	From    netip.AddrPort // the client's address
	ID      uint16         // the query's ID
	Name    string         // the name asked for, lower-cased; "" if the query was malformed
	Type    Type
	RCode   RCode // what the server answered
	Answers int   // how many records the answer carried
	Trunc   bool  // the answer did not fit a UDP message and was truncated
}

func (q Query) String() string {
	s := fmt.Sprintf("%v %s %q %s from %s: %s, %d answers", q.T, q.Net, q.Name, q.Type, q.From, q.RCode, q.Answers)
	if q.Trunc {
		s += ", truncated"
	}
	return s
}

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock that stamps queries, for example the lab's
// (netlab.Lab.Now), so that queries are on the lab's timebase. Default: time
// since New.
func WithClock(now func() time.Duration) Option { return func(s *Server) { s.now = now } }

// WithOnQuery sets a function called with every query as it is answered, on
// the serving goroutine; it must not block.
func WithOnQuery(f func(Query)) Option { return func(s *Server) { s.onQuery = f } }

// WithLogger sets the logger for the server's own diagnostics. Default:
// discard.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// Server is an authoritative DNS server for the names in its table. Its
// methods are safe for concurrent use.
type Server struct {
	now     func() time.Duration
	onQuery func(Query)
	log     *slog.Logger

	mu      sync.Mutex // guards the fields below; never held while calling out
	names   map[string]entry
	queries []Query
	closed  bool
	closers []func() error // listeners and connections to close
	serving sync.WaitGroup
}

type entry struct {
	addrs []netip.Addr
	ttl   uint32
}

// New returns a server with an empty table, serving nothing yet (see
// ListenIn, ServePacket, ServeListener).
func New(opts ...Option) *Server {
	start := time.Now()
	s := &Server{now: func() time.Duration { return time.Since(start) }, log: slog.New(slog.DiscardHandler),
		names: make(map[string]entry)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Set makes name resolve to addrs (IPv4 ones as A records, IPv6 ones as AAAA,
// each family in the order given) with the given TTL, replacing what name
// had. A name set with no addresses exists with no records: NODATA. The
// change applies to the next query.
func (s *Server) Set(name string, addrs []netip.Addr, ttl time.Duration) error {
	key, err := canonical(name)
	if err != nil {
		return err
	}
	if ttl < 0 {
		return fmt.Errorf("dns: %s: negative TTL %v", name, ttl)
	}
	secs := ttl / time.Second
	if secs > math.MaxInt32 { // RFC 2181 section 8: TTLs are 31-bit
		return fmt.Errorf("dns: %s: TTL %v too long", name, ttl)
	}
	e := entry{ttl: uint32(secs)}
	for _, a := range addrs {
		if !a.IsValid() || a.Zone() != "" {
			return fmt.Errorf("dns: %s: address %q cannot be a record", name, a)
		}
		e.addrs = append(e.addrs, a.Unmap())
	}
	s.mu.Lock()
	s.names[key] = e
	s.mu.Unlock()
	return nil
}

// Delete removes name from the table: it is NXDOMAIN from the next query.
func (s *Server) Delete(name string) error {
	key, err := canonical(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.names, key)
	s.mu.Unlock()
	return nil
}

// Lookup returns what name resolves to now, and whether it exists.
func (s *Server) Lookup(name string) ([]netip.Addr, bool) {
	key, err := canonical(name)
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.names[key]
	return slices.Clone(e.addrs), ok
}

// Queries returns every query received so far, in the order answered.
func (s *Server) Queries() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queries)
}

// maxLabelLen is the longest label (RFC 1035 section 2.3.4).
const maxLabelLen = 63

// canonical checks a table name (letters, digits, '-' and '_'; labels of 1 to
// 63 bytes; a trailing dot allowed) and lower-cases it.
func canonical(name string) (string, error) {
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	if n == "" || len(n) > 253 {
		return "", fmt.Errorf("dns: name %q: want 1 to 253 characters", name)
	}
	for _, l := range strings.Split(n, ".") {
		if l == "" || len(l) > maxLabelLen {
			return "", fmt.Errorf("dns: name %q: labels have 1 to %d characters", name, maxLabelLen)
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("dns: name %q: character %q not allowed", name, c)
			}
		}
	}
	return n, nil
}

// maxUDP is the largest answer sent over UDP: RFC 1035's 512 bytes. The
// server ignores EDNS (RFC 6891 section 7 lets it): a longer answer is sent
// truncated, with no records, and the client asks again over TCP.
const maxUDP = 512

// answer builds the reply to one query message. ok is false when nothing is
// to be sent: the message is too short to carry an ID, or is itself a reply.
// limit bounds the reply's size (0: none).
func (s *Server) answer(req []byte, network string, from netip.AddrPort, limit int) (msg []byte, ok bool) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil || h.Response {
		return nil, false
	}
	q := Query{T: s.now(), Net: network, From: from, ID: h.ID}
	r := reply{header: dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, Authoritative: true,
		RecursionDesired: h.RecursionDesired}}
	qs, err := readQuery(&p, req)
	switch {
	case err != nil:
		r.header.RCode = dnsmessage.RCodeFormatError
		s.log.Debug("dns: malformed query", "from", from, "err", err)
	case h.OpCode != 0:
		r.header.RCode = dnsmessage.RCodeNotImplemented
	case len(qs) != 1:
		r.header.RCode = dnsmessage.RCodeFormatError
	default:
		s.resolve(&r, &q, qs[0])
	}
	msg, err = r.pack()
	if err == nil && limit > 0 && len(msg) > limit {
		r.header.Truncated, r.addrs, q.Trunc = true, nil, true
		msg, err = r.pack()
	}
	if err != nil { // cannot happen for names that were just read; answer anyway
		s.log.Error("dns: packing an answer", "err", err)
		r = reply{header: dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeServerFailure}}
		msg, _ = r.pack()
	}
	q.RCode, q.Answers = RCode(r.header.RCode), len(r.addrs)
	s.record(q)
	return msg, true
}

// resolve answers the one question of a well-formed query from the table,
// into r, and notes the name and type asked for in q.
func (s *Server) resolve(r *reply, q *Query, qu dnsmessage.Question) {
	r.question = &qu
	q.Name, q.Type = strings.ToLower(nameString(qu.Name)), Type(qu.Type)
	if qu.Class != dnsmessage.ClassINET && qu.Class != dnsmessage.ClassANY {
		r.header.RCode = dnsmessage.RCodeRefused
		return
	}
	s.mu.Lock()
	e, found := s.names[q.Name]
	s.mu.Unlock()
	if !found {
		r.header.RCode = dnsmessage.RCodeNameError
		return
	}
	r.ttl = e.ttl
	for _, a := range e.addrs { // NODATA when nothing matches (RFC 2308 section 2.2)
		t := TypeA
		if a.Is6() {
			t = TypeAAAA
		}
		if q.Type == t || q.Type == TypeANY {
			r.addrs = append(r.addrs, a)
		}
	}
}

// record keeps q and reports it (WithOnQuery).
func (s *Server) record(q Query) {
	s.mu.Lock()
	s.queries = append(s.queries, q)
	s.mu.Unlock()
	if s.onQuery != nil {
		s.onQuery(q)
	}
}

// Close stops serving: every listener and connection is closed and every
// serving goroutine has returned when Close returns. The table stays
// readable. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	var errs []error
	for _, c := range closers {
		if err := c(); err != nil && !isClosedErr(err) {
			errs = append(errs, err)
		}
	}
	s.serving.Wait()
	return errors.Join(errs...)
}
