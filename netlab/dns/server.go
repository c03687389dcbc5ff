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
// The wire format is written here (wire.go), for the few record types an
// authoritative server for addresses needs; the module takes no DNS
// dependency.
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
			if !('a' <= c && c <= 'z' || isDigit(c) || c == '-' || c == '_') {
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
func (s *Server) answer(req []byte, network string, from netip.AddrPort, limit int) (reply []byte, ok bool) {
	h, _, err := unpackHeader(req)
	if err != nil || h.Response {
		return nil, false
	}
	q := Query{T: s.now(), Net: network, From: from, ID: h.ID}
	resp := &Message{Header: Header{ID: h.ID, Response: true, Opcode: h.Opcode, Authoritative: true,
		RecursionDesired: h.RecursionDesired}}
	m, err := Unpack(req)
	switch {
	case err != nil:
		resp.RCode = RCodeFormErr
		s.log.Debug("dns: malformed query", "from", from, "err", err)
	case h.Opcode != 0:
		resp.RCode = RCodeNotImp
	case len(m.Questions) != 1:
		resp.RCode = RCodeFormErr
	default:
		qu := m.Questions[0]
		resp.Questions = m.Questions
		q.Name, q.Type = strings.ToLower(qu.Name), qu.Type
		if qu.Class != ClassINET && qu.Class != ClassANY {
			resp.RCode = RCodeRefused
			break
		}
		s.mu.Lock()
		e, found := s.names[q.Name]
		s.mu.Unlock()
		if !found {
			resp.RCode = RCodeNXDomain
			break
		}
		for _, a := range e.addrs { // NODATA when nothing matches (RFC 2308 section 2.2)
			t := TypeA
			if a.Is6() {
				t = TypeAAAA
			}
			if qu.Type == t || qu.Type == TypeANY {
				resp.Answers = append(resp.Answers, Resource{Name: qu.Name, Type: t, Class: ClassINET, TTL: e.ttl, Data: a.AsSlice()})
			}
		}
	}
	reply, err = resp.Pack()
	if err == nil && limit > 0 && len(reply) > limit {
		resp.Truncated, resp.Answers, q.Trunc = true, nil, true
		reply, err = resp.Pack()
	}
	if err != nil { // cannot happen for names that were just unpacked; answer anyway
		s.log.Error("dns: packing an answer", "err", err)
		resp = &Message{Header: Header{ID: h.ID, Response: true, RCode: RCodeServFail}}
		reply, _ = resp.Pack()
	}
	q.RCode, q.Answers = resp.RCode, len(resp.Answers)
	s.mu.Lock()
	s.queries = append(s.queries, q)
	s.mu.Unlock()
	if s.onQuery != nil {
		s.onQuery(q)
	}
	return reply, true
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
