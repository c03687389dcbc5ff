package pcap

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/capture"
)

// Capture is what a packet capture shows of a client: its connection
// attempts and their fate, its DNS, and its gRPC over h2c where the
// capture holds the payload.
type Capture struct {
	File   string // as given to Read
	Format string // FormatPcap or FormatPcapng
	// Zero is the time events count from: Since's, or the earliest
	// packet's timestamp.
	Zero time.Time
	// Packets is how many packets the file holds.
	Packets int
	// Clients are the client addresses: Client's, or every address that
	// sent a SYN (or was sent a SYN-ACK), in address order.
	Clients []netip.Addr
	// Events are the trace events, in time order (see the package
	// documentation for what each kind carries).
	Events []trace.Event
	// Attempts are the connection attempts, in the order of their first
	// SYN, folded as the lab's live capture folds them; their times are
	// the capture's (subtract Zero for trace time). An attempt the
	// capture ends before an answer is Unanswered.
	Attempts []capture.Attempt
	// Notes say what the reader left out or could not follow, and why.
	Notes []string
}

// Option configures Read.
type Option func(*config)

type config struct {
	zero    time.Time
	clients map[netip.Addr]bool // nil: infer
}

// Since counts event times from t instead of the capture's earliest
// packet; packets stamped before t are left out (with a note).
func Since(t time.Time) Option {
	return func(c *config) { c.zero = t }
}

// Client says which addresses are the client's, for a capture that holds
// other traffic: only connections a client opened (or, when the capture
// does not show the opening, has at one end), and DNS it asked, are read.
// Without it every address that sends a SYN is a client.
func Client(addrs ...netip.Addr) Option {
	return func(c *config) {
		if c.clients == nil {
			c.clients = map[netip.Addr]bool{}
		}
		for _, a := range addrs {
			c.clients[a.Unmap()] = true
		}
	}
}

// ReadFile reads the pcap or pcapng file at path (gzip-compressed or not);
// see Read.
func ReadFile(path string, opts ...Option) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f, opts...)
}

// Read reads a pcap or pcapng capture (gzip-compressed or not) from r and
// turns it into trace events. name is the file's name for errors, which
// are *Error naming it and the packet.
func Read(name string, r io.Reader, opts ...Option) (*Capture, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	src, err := openSource(name, r)
	if err != nil {
		return nil, err
	}
	rd := newReader(cfg, src)
	if err := rd.readAll(); err != nil {
		return nil, err
	}
	return rd.finish()
}

// reader holds what Read knows while it goes through the packets.
type reader struct {
	cfg      config
	src      *source
	dec      *decoder
	attempts *capture.Tracker
	conns    map[connKey]*conn
	clients  map[netip.Addr]bool // given, or inferred so far
	copies   map[copyKey]copySeen
	connList []*conn // in the order they opened
	dns      map[dnsKey]dnsQuery
	dnsSent  int           // queries seen
	last     frame         // the last packet's number and time, for what the end notes
	rpcs     int           // RPC ids handed out
	first    time.Time     // the earliest packet's timestamp
	epoch    time.Time     // the first packet's: events' T count from it until Zero is known
	tcp      int           // TCP segments of clients
	tcpAny   int           // TCP segments
	out      []trace.Event // T since epoch
	notes    []string
	tallies  map[string]*tally
	order    []string // tally keys in the order first seen
}

func newReader(cfg config, src *source) *reader {
	clients := cfg.clients
	if clients == nil {
		clients = map[netip.Addr]bool{}
	}
	return &reader{
		cfg: cfg, src: src, dec: newDecoder(), attempts: capture.NewTracker(),
		conns: map[connKey]*conn{}, clients: clients, copies: map[copyKey]copySeen{},
		dns: map[dnsKey]dnsQuery{}, tallies: map[string]*tally{},
	}
}

// readAll goes through every packet of the file.
func (r *reader) readAll() error {
	var f frame
	for {
		ok, err := r.src.read(&f)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := r.frame(&f); err != nil {
			return err
		}
		r.last = frame{n: f.n, at: f.at}
	}
}

// frame handles one packet record.
func (r *reader) frame(f *frame) error {
	if _, ok := supportedLinks[f.link]; !ok {
		return &Error{File: r.src.name, Packet: f.n, Offset: f.offset, Err: ErrLinkType,
			Reason: fmt.Sprintf("link type %v (%d) (%s)", f.link, int(f.link), wantLinks)}
	}
	if r.epoch.IsZero() {
		r.epoch = f.at
	}
	if r.first.IsZero() || f.at.Before(r.first) {
		r.first = f.at
	}
	pk, ok, err := r.dec.decode(f)
	switch {
	case err != nil:
		r.tally("undecodable", f, "frames could not be decoded", err.Error())
	case !ok:
	case pk.tcp != nil:
		r.segment(f, pk)
	case pk.src.Port() == dnsPort || pk.dst.Port() == dnsPort:
		r.datagram(f, pk)
	}
	return nil
}

// emit records an event at the capture's time at.
func (r *reader) emit(at time.Time, e trace.Event) {
	e.T = at.Sub(r.epoch)
	r.out = append(r.out, e)
}

// note records something the reader could not follow, as a note in the
// notes and as a note event at the packet's time.
func (r *reader) note(f *frame, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	r.notes = append(r.notes, fmt.Sprintf("packet %d: %s", f.n, text))
	r.emit(f.at, trace.Event{Source: trace.SourceHarness, Kind: trace.KindNote, Detail: "capture: " + text})
}

// tally counts what happens too often for a note each: one note per kind
// at the end, with the first occurrence.
type tally struct {
	n     int
	what  string
	first string
}

func (r *reader) tally(key string, f *frame, what, detail string) {
	t := r.tallies[key]
	if t == nil {
		t = &tally{what: what, first: fmt.Sprintf("packet %d: %s", f.n, detail)}
		r.tallies[key] = t
		r.order = append(r.order, key)
	}
	t.n++
}

// finish ends what is still open, checks that the capture showed a
// client's TCP, and puts the events on the trace's timebase.
func (r *reader) finish() (*Capture, error) {
	if r.tcp == 0 {
		return nil, r.noTCP()
	}
	r.attempts.Close()
	r.endDNS()
	r.endConns()
	c := &Capture{File: r.src.name, Format: r.src.format, Zero: r.cfg.zero, Packets: r.src.n,
		Attempts: r.attempts.Attempts()}
	if c.Zero.IsZero() {
		c.Zero = r.first
	}
	c.Events = r.timeline(c.Zero)
	for a := range r.clients {
		c.Clients = append(c.Clients, a)
	}
	slices.SortFunc(c.Clients, netip.Addr.Compare)
	c.Notes = r.notes
	for _, k := range r.order {
		t := r.tallies[k]
		c.Notes = append(c.Notes, fmt.Sprintf("%d %s (first: %s)", t.n, t.what, t.first))
	}
	return c, nil
}

// endConns ends decoding of every connection still decoded.
func (r *reader) endConns() {
	for _, c := range r.connList {
		c.end(r, &r.last)
	}
}

// timeline moves the events to time since zero, in time order (stable,
// so events of one packet keep their order); events before zero are left
// out, with a note.
func (r *reader) timeline(zero time.Time) []trace.Event {
	shift := r.epoch.Sub(zero)
	evs := r.out[:0]
	early := 0
	for _, e := range r.out {
		e.T += shift
		if e.T < 0 {
			early++
			continue
		}
		evs = append(evs, e)
	}
	if early > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%d events before the zero time %s were left out", early, zero.Format(time.RFC3339Nano)))
	}
	slices.SortStableFunc(evs, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
	return evs
}

func (r *reader) noTCP() error {
	want := "want the client's connection attempts, SYNs and their answers: capture on the client's host with the " +
		"filter of the package documentation"
	reason := fmt.Sprintf("none of its %d packets is a TCP segment (%s)", r.src.n, want)
	switch {
	case r.tcpAny > 0 && r.cfg.clients == nil:
		reason = fmt.Sprintf("none of its %d TCP segments shows which end is the client: no SYN, no SYN-ACK (%s, "+
			"from before the connections opened; or name the client with Client)", r.tcpAny, want)
	case r.cfg.clients != nil:
		reason = fmt.Sprintf("none of its %d packets is a TCP segment from or to the client addresses %v (%s)",
			r.src.n, slices.SortedFunc(maps.Keys(r.cfg.clients), netip.Addr.Compare), want)
	}
	return &Error{File: r.src.name, Offset: -1, Err: ErrNoTCP, Reason: reason}
}
