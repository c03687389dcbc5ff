package pcap

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2 writes both sides of a gRPC conversation over h2c with x/net/http2's
// Framer and HPACK encoder, for captures built in the tests.
type h2 struct {
	tb             testing.TB
	client, server bytes.Buffer
	cfr, sfr       *http2.Framer
	chb, shb       bytes.Buffer
	cenc, senc     *hpack.Encoder
}

// newH2 begins a connection: the client's preface and SETTINGS, the
// server's SETTINGS, and both ACKs.
func newH2(tb testing.TB) *h2 {
	h := &h2{tb: tb}
	h.client.WriteString(http2.ClientPreface)
	h.cfr, h.sfr = http2.NewFramer(&h.client, nil), http2.NewFramer(&h.server, nil)
	h.cenc, h.senc = hpack.NewEncoder(&h.chb), hpack.NewEncoder(&h.shb)
	h.check(h.cfr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20}))
	h.check(h.sfr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100}))
	h.check(h.sfr.WriteSettingsAck())
	h.check(h.cfr.WriteSettingsAck())
	return h
}

func (h *h2) check(err error) {
	h.tb.Helper()
	if err != nil {
		h.tb.Fatal(err)
	}
}

// block encodes header fields (name, value, name, value, …) with enc.
func (h *h2) block(enc *hpack.Encoder, buf *bytes.Buffer, kv ...string) []byte {
	buf.Reset()
	for i := 0; i < len(kv); i += 2 {
		h.check(enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]}))
	}
	return bytes.Clone(buf.Bytes())
}

// request sends a unary request for method on stream: HEADERS, then one
// DATA frame ending the stream.
func (h *h2) request(stream uint32, method string) {
	hb := h.block(h.cenc, &h.chb, ":method", "POST", ":scheme", "http", ":path", method, ":authority", "svc.conform:50051",
		"content-type", "application/grpc", "te", "trailers", "grpc-timeout", "1S")
	h.check(h.cfr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hb, EndHeaders: true}))
	h.check(h.cfr.WriteData(stream, true, []byte{0, 0, 0, 0, 2, 'h', 'i'}))
}

// requestSplit sends the request HEADERS as a HEADERS and a CONTINUATION.
func (h *h2) requestSplit(stream uint32, method string) {
	hb := h.block(h.cenc, &h.chb, ":method", "POST", ":scheme", "http", ":path", method, ":authority", "svc.conform:50051",
		"content-type", "application/grpc")
	h.check(h.cfr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hb[:3]}))
	h.check(h.cfr.WriteContinuation(stream, true, hb[3:]))
	h.check(h.cfr.WriteData(stream, true, []byte{0, 0, 0, 0, 0}))
}

// respond answers stream with headers, a message and trailers carrying
// status (and message when set).
func (h *h2) respond(stream uint32, status, message string) {
	hb := h.block(h.senc, &h.shb, ":status", "200", "content-type", "application/grpc")
	h.check(h.sfr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hb, EndHeaders: true}))
	h.check(h.sfr.WriteData(stream, false, []byte{0, 0, 0, 0, 2, 'b', '1'}))
	kv := []string{"grpc-status", status}
	if message != "" {
		kv = append(kv, "grpc-message", message)
	}
	tb := h.block(h.senc, &h.shb, kv...)
	h.check(h.sfr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: tb, EndHeaders: true, EndStream: true}))
}

// respondOnly answers stream with a trailers-only response.
func (h *h2) respondOnly(stream uint32, httpStatus, status string) {
	kv := []string{":status", httpStatus}
	if status != "" {
		kv = append(kv, "grpc-status", status)
	}
	hb := h.block(h.senc, &h.shb, kv...)
	h.check(h.sfr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hb, EndHeaders: true, EndStream: true}))
}

// reset sends an RST_STREAM from the client (fromClient) or the server.
func (h *h2) reset(stream uint32, fromClient bool, code http2.ErrCode) {
	fr := h.sfr
	if fromClient {
		fr = h.cfr
	}
	h.check(fr.WriteRSTStream(stream, code))
}

// takeClient and takeServer return what each side wrote since last time.
func (h *h2) takeClient() []byte { b := bytes.Clone(h.client.Bytes()); h.client.Reset(); return b }
func (h *h2) takeServer() []byte { b := bytes.Clone(h.server.Bytes()); h.server.Reset(); return b }

// tcpConn drives one TCP connection in a builder: the handshake, then
// payload in segments.
type tcpConn struct {
	b          *builder
	c, s       netip.AddrPort
	cseq, sseq uint32 // next sequence number of each side
}

// open adds SYN, SYN-ACK and ACK, 1 ms apart from at.
func (b *builder) open(at time.Duration, c, s netip.AddrPort, cisn, sisn uint32) *tcpConn {
	b.tcp(at, c, s, cisn, 0, "S", nil)
	b.tcp(at+time.Millisecond, s, c, sisn, cisn+1, "SA", nil)
	b.tcp(at+2*time.Millisecond, c, s, cisn+1, sisn+1, "A", nil)
	return &tcpConn{b: b, c: c, s: s, cseq: cisn + 1, sseq: sisn + 1}
}

// segments cuts data into segments of at most mss bytes.
func segments(data []byte, mss int) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n := min(mss, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// send adds data from the client (fromClient) or the server at at, in
// segments of at most mss bytes, in order.
func (k *tcpConn) send(at time.Duration, fromClient bool, data []byte, mss int) {
	for _, seg := range segments(data, mss) {
		k.segment(at, fromClient, seg)
	}
}

// segment adds one segment and advances the sender's sequence number.
func (k *tcpConn) segment(at time.Duration, fromClient bool, seg []byte) {
	if fromClient {
		k.b.tcp(at, k.c, k.s, k.cseq, k.sseq, "PA", seg)
		k.cseq += uint32(len(seg))
		return
	}
	k.b.tcp(at, k.s, k.c, k.sseq, k.cseq, "PA", seg)
	k.sseq += uint32(len(seg))
}
