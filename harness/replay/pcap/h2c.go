package pcap

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"

	"github.com/conformlab/conform/harness/trace"
)

// errNotH2C ends decoding of a connection whose client does not begin
// with the HTTP/2 client preface: TLS, HTTP/1, or anything else. It is
// not worth a note.
var errNotH2C = errors.New("not h2c")

// Limits that keep a damaged or hostile capture from holding memory.
const (
	maxEarly     = 64 << 10  // server bytes buffered before the client's preface is whole
	maxBlock     = 1 << 20   // one header block, HEADERS and CONTINUATION together
	maxTableSize = 1 << 16   // HPACK dynamic table size updates accepted (a passive reader need not enforce SETTINGS)
	maxFrameSize = 1<<24 - 1 // HTTP/2's largest frame
)

// h2c decodes one connection's gRPC over HTTP/2 in clear text: the
// client's preface, request headers (the method) and the server's
// responses and trailers (the status), stream by stream.
type h2c struct {
	key      connKey
	matched  int    // bytes of the client preface seen so far
	early    []byte // the server's bytes before the preface was whole
	up, down *framing
	calls    map[uint32]*call // by stream id
}

// call is one RPC: a request HEADERS on a stream.
type call struct {
	stream     uint32
	id, method string
	done       bool // its result was emitted
}

// framing reads one direction's frames and decodes its header blocks; a
// direction has its own HPACK table.
type framing struct {
	in          inbuf
	fr          *http2.Framer
	dec         *hpack.Decoder
	block       []byte // header block being assembled
	blockStream uint32 // its stream; 0 for a PUSH_PROMISE's, decoded only to keep the table
	blockEnd    bool   // its HEADERS ended the stream
}

func newH2C(key connKey) *h2c {
	return &h2c{key: key, up: newFraming(), down: newFraming(), calls: map[uint32]*call{}}
}

func newFraming() *framing {
	f := &framing{dec: hpack.NewDecoder(4096, nil)}
	f.dec.SetAllowedMaxDynamicTableSize(maxTableSize)
	f.fr = http2.NewFramer(io.Discard, &f.in)
	f.fr.SetMaxReadFrameSize(maxFrameSize)
	return f
}

// feed takes the next bytes of one direction, in order, from the packet f.
func (h *h2c) feed(r *reader, f *frame, dir direction, b []byte) error {
	if dir == down {
		if h.matched < len(http2.ClientPreface) {
			if len(h.early)+len(b) > maxEarly {
				return errNotH2C
			}
			h.early = append(h.early, b...)
			return nil
		}
		return h.frames(r, f, down, b)
	}
	if h.matched < len(http2.ClientPreface) {
		n := min(len(b), len(http2.ClientPreface)-h.matched)
		if string(b[:n]) != http2.ClientPreface[h.matched:h.matched+n] {
			return errNotH2C
		}
		h.matched, b = h.matched+n, b[n:]
		if h.matched < len(http2.ClientPreface) {
			return nil
		}
		r.emit(f.at, trace.Event{Source: trace.SourceBackend, Kind: trace.KindPreface,
			Addr: h.key.server.String(), Peer: h.key.client.String()})
		early := h.early
		h.early = nil
		if err := h.frames(r, f, down, early); err != nil {
			return err
		}
	}
	return h.frames(r, f, up, b)
}

func (h *h2c) framing(dir direction) *framing {
	if dir == up {
		return h.up
	}
	return h.down
}

// frames reads every whole frame the direction now holds.
func (h *h2c) frames(r *reader, f *frame, dir direction, b []byte) error {
	fg := h.framing(dir)
	fg.in.write(b)
	for fg.in.whole() {
		fr, err := fg.fr.ReadFrame()
		if err != nil {
			return fmt.Errorf("HTTP/2 from the %s: %v", side(dir), err)
		}
		if err := h.frame(r, f, dir, fr); err != nil {
			return err
		}
	}
	return nil
}

func side(dir direction) string {
	if dir == up {
		return "client"
	}
	return "server"
}

// frame handles one frame: header blocks are assembled and decoded (every
// one, to keep the HPACK table right), RST_STREAM ends an RPC; the rest
// says nothing about RPC results.
func (h *h2c) frame(r *reader, f *frame, dir direction, fr http2.Frame) error {
	fg := h.framing(dir)
	switch x := fr.(type) {
	case *http2.HeadersFrame:
		fg.block = append(fg.block[:0], x.HeaderBlockFragment()...)
		fg.blockStream, fg.blockEnd = x.StreamID, x.StreamEnded()
		if x.HeadersEnded() {
			return h.headers(r, f, dir)
		}
	case *http2.PushPromiseFrame:
		fg.block, fg.blockStream, fg.blockEnd = append(fg.block[:0], x.HeaderBlockFragment()...), 0, false
		if x.HeadersEnded() {
			return h.headers(r, f, dir)
		}
	case *http2.ContinuationFrame:
		if len(fg.block)+len(x.HeaderBlockFragment()) > maxBlock {
			return fmt.Errorf("a header block from the %s over %d bytes", side(dir), maxBlock)
		}
		fg.block = append(fg.block, x.HeaderBlockFragment()...)
		if x.HeadersEnded() {
			return h.headers(r, f, dir)
		}
	case *http2.RSTStreamFrame:
		h.reset(r, f, dir, x)
	}
	return nil
}

// headers decodes the header block just completed in direction dir.
func (h *h2c) headers(r *reader, f *frame, dir direction) error {
	fg := h.framing(dir)
	fields, err := fg.dec.DecodeFull(fg.block)
	if err != nil {
		return fmt.Errorf("HPACK in the %s's headers on stream %d: %v", side(dir), fg.blockStream, err)
	}
	switch {
	case fg.blockStream == 0:
	case dir == up:
		h.request(r, f, fg.blockStream, fields)
	default:
		h.response(r, f, fg.blockStream, fg.blockEnd, fields)
	}
	return nil
}

// request starts an RPC: the client's HEADERS on a new stream, with the
// method in :path, recorded as the server receiving it (rpc-served, as a
// lab backend records each RPC). RPCs are named r1, r2, … in the order of
// their requests in the capture.
func (h *h2c) request(r *reader, f *frame, stream uint32, fields []hpack.HeaderField) {
	if h.calls[stream] != nil {
		return // trailers from the client: gRPC sends none, and they start nothing
	}
	r.rpcs++
	c := &call{stream: stream, id: "r" + strconv.Itoa(r.rpcs), method: value(fields, ":path")}
	h.calls[stream] = c
	r.emit(f.at, trace.Event{Source: trace.SourceBackend, Kind: trace.KindRPCServed, RPC: c.id, Method: c.method,
		Addr: h.key.server.String(), Peer: h.key.client.String()})
}

// response reads the server's headers on a stream: grpc-status (in
// trailers, or a trailers-only response) gives the result; without it, a
// non-200 :status or the end of the stream does (gRPC's HTTP to gRPC
// status mapping).
func (h *h2c) response(r *reader, f *frame, stream uint32, end bool, fields []hpack.HeaderField) {
	c := h.calls[stream]
	if c == nil || c.done {
		return
	}
	status, http := value(fields, "grpc-status"), value(fields, ":status")
	switch {
	case status != "":
		code, msg := grpcStatus(status), value(fields, "grpc-message")
		if m, err := url.PathUnescape(msg); err == nil {
			msg = m
		}
		h.result(r, f, c, code, msg)
	case http != "" && http != "200":
		h.result(r, f, c, httpCode(http), "HTTP status "+http+" without grpc-status")
	case end:
		h.result(r, f, c, trace.CodeName(codes.Unknown), "the response ended without grpc-status")
	}
}

// grpcStatus names the status code of a grpc-status value.
func grpcStatus(v string) string {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return trace.CodeName(codes.Unknown)
	}
	return trace.CodeName(codes.Code(n))
}

// httpCode is gRPC's HTTP to gRPC status mapping, for a response without
// grpc-status.
func httpCode(status string) string {
	switch status {
	case "400":
		return trace.CodeName(codes.Internal)
	case "401":
		return trace.CodeName(codes.Unauthenticated)
	case "403":
		return trace.CodeName(codes.PermissionDenied)
	case "404":
		return trace.CodeName(codes.Unimplemented)
	case "429", "502", "503", "504":
		return trace.CodeName(codes.Unavailable)
	}
	return trace.CodeName(codes.Unknown)
}

// rstCodes is gRPC's mapping of the HTTP/2 error code of an RST_STREAM a
// server sends; any other code is INTERNAL.
var rstCodes = map[http2.ErrCode]codes.Code{
	http2.ErrCodeRefusedStream:      codes.Unavailable,
	http2.ErrCodeCancel:             codes.Canceled,
	http2.ErrCodeEnhanceYourCalm:    codes.ResourceExhausted,
	http2.ErrCodeInadequateSecurity: codes.PermissionDenied,
}

// reset ends an RPC with an RST_STREAM. From the server, its error code
// gives the status; from the client, the capture cannot tell a deadline
// from a cancellation, so the result has no code, only the reason.
func (h *h2c) reset(r *reader, f *frame, dir direction, x *http2.RSTStreamFrame) {
	c := h.calls[x.StreamID]
	if c == nil || c.done {
		return
	}
	if dir == up {
		h.result(r, f, c, "", fmt.Sprintf("the client reset the stream (RST_STREAM %v): a deadline or a cancellation", x.ErrCode))
		return
	}
	code, ok := rstCodes[x.ErrCode]
	if !ok {
		code = codes.Internal
	}
	h.result(r, f, c, trace.CodeName(code), fmt.Sprintf("the server reset the stream (RST_STREAM %v)", x.ErrCode))
}

// result emits an RPC's result as the client's driver would report it,
// with the method, the server's address and the client's.
func (h *h2c) result(r *reader, f *frame, c *call, code, msg string) {
	c.done = true
	r.emit(f.at, trace.Event{Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: c.id, Method: c.method,
		Addr: h.key.server.String(), Peer: h.key.client.String(), Code: code, Err: msg})
}

// end notes the RPCs the capture shows no result for when the connection
// ends (at says how: "by the end of the capture", "when the connection was
// reset").
func (h *h2c) end(r *reader, last *frame, at string) {
	var open []*call
	for _, c := range h.calls {
		if !c.done {
			open = append(open, c)
		}
	}
	slices.SortFunc(open, func(a, b *call) int { return int(a.stream) - int(b.stream) })
	for _, c := range open {
		r.note(last, "%s (%s, stream %d, %s to %s) has no result %s", c.id, c.method, c.stream,
			h.key.client, h.key.server, at)
	}
}

// value is the value of the header field name; "" if absent.
func value(fields []hpack.HeaderField, name string) string {
	for _, f := range fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// inbuf holds one direction's bytes in order until whole frames are read
// from it.
type inbuf struct {
	b   []byte
	off int
}

func (in *inbuf) write(p []byte) {
	if in.off > 0 && in.off >= len(in.b)/2 {
		in.b = append(in.b[:0], in.b[in.off:]...)
		in.off = 0
	}
	in.b = append(in.b, p...)
}

func (in *inbuf) Read(p []byte) (int, error) {
	if in.off == len(in.b) {
		return 0, io.EOF
	}
	n := copy(p, in.b[in.off:])
	in.off += n
	return n, nil
}

// whole reports whether a whole frame is buffered: its 9-byte header and
// the payload length the header gives.
func (in *inbuf) whole() bool {
	rest := in.b[in.off:]
	if len(rest) < 9 {
		return false
	}
	n := int(rest[0])<<16 | int(rest[1])<<8 | int(rest[2])
	return len(rest) >= 9+n
}
