package pcap

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/http2"

	"github.com/conformlab/conform/harness/trace"
)

func prefaceEv(t time.Duration) trace.Event {
	return trace.Event{T: t, Source: trace.SourceBackend, Kind: trace.KindPreface, Addr: s1.String(), Peer: c1.String()}
}

func resultEv(t time.Duration, rpc, method, code, err string) trace.Event {
	return trace.Event{T: t, Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: rpc, Method: method,
		Addr: s1.String(), Peer: c1.String(), Code: code, Err: err}
}

// rpcEvents are the events of kinds the h2c decoder writes, and notes.
func rpcEvents(evs []trace.Event) []trace.Event {
	return trace.Select(evs, trace.OfKind(trace.KindPreface, trace.KindRPCResult))
}

func notes(evs []trace.Event) []string {
	var out []string
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindNote)) {
		out = append(out, e.Detail)
	}
	return out
}

// readH2C builds a capture with build and reads it in both formats,
// checking they agree; it returns the events.
func readH2C(t *testing.T, build func(b *builder)) []trace.Event {
	t.Helper()
	var got [][]trace.Event
	for _, f := range formats {
		b := newBuilder(t, layers.LinkTypeEthernet)
		build(b)
		c, err := Read("h2c."+f.name, bytes.NewReader(f.bytes(b)))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Events)
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Fatalf("pcap and pcapng disagree (-pcap +pcapng):\n%s", diff)
	}
	return got[0]
}

// TestH2C_UnaryRPCs verifies a connection's preface and the results of
// its RPCs: grpc-status from trailers (with grpc-message percent-decoded),
// a request split over CONTINUATION, a trailers-only HTTP 503 without
// grpc-status, a server's REFUSED_STREAM and a client's reset.
func TestH2C_UnaryRPCs(t *testing.T) {
	evs := readH2C(t, func(b *builder) {
		k := b.open(0, c1, s1, 100, 900)
		h := newH2(t)
		h.request(1, "/conform.Echo/Unary")
		h.requestSplit(3, "/conform.Echo/Other")
		h.request(5, "/conform.Echo/Unary")
		h.request(7, "/conform.Echo/Unary")
		h.request(9, "/conform.Echo/Unary")
		k.send(3*ms, true, h.takeClient(), 1400)
		h.respond(1, "0", "")
		h.respond(3, "14", "no%20backend")
		k.send(4*ms, false, h.takeServer(), 1400)
		h.respondOnly(5, "503", "")
		h.reset(7, false, http2.ErrCodeRefusedStream)
		k.send(5*ms, false, h.takeServer(), 1400)
		h.reset(9, true, http2.ErrCodeCancel)
		k.send(6*ms, true, h.takeClient(), 1400)
	})
	want := []trace.Event{
		prefaceEv(3 * ms),
		resultEv(4*ms, "r1", "/conform.Echo/Unary", "OK", ""),
		resultEv(4*ms, "r2", "/conform.Echo/Other", "UNAVAILABLE", "no backend"),
		resultEv(5*ms, "r3", "/conform.Echo/Unary", "UNAVAILABLE", "HTTP status 503 without grpc-status"),
		resultEv(5*ms, "r4", "/conform.Echo/Unary", "UNAVAILABLE", "the server reset the stream (RST_STREAM REFUSED_STREAM)"),
		resultEv(6*ms, "r5", "/conform.Echo/Unary", "", "the client reset the stream (RST_STREAM CANCEL): a deadline or a cancellation"),
	}
	if diff := cmp.Diff(want, rpcEvents(evs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := notes(evs); len(n) > 0 {
		t.Errorf("notes %q, want none", n)
	}
	var served []trace.Event
	for i, m := range []string{"/conform.Echo/Unary", "/conform.Echo/Other", "/conform.Echo/Unary", "/conform.Echo/Unary", "/conform.Echo/Unary"} {
		served = append(served, trace.Event{T: 3 * ms, Source: trace.SourceBackend, Kind: trace.KindRPCServed,
			RPC: fmt.Sprintf("r%d", i+1), Method: m, Addr: s1.String(), Peer: c1.String()})
	}
	if diff := cmp.Diff(served, trace.Select(evs, trace.OfKind(trace.KindRPCServed))); diff != "" {
		t.Errorf("requests, as the server received them (-want +got):\n%s", diff)
	}
}

// TestH2C_OutOfOrderAndRetransmitted verifies payload is put back in order:
// segments that arrive out of order are held, retransmitted bytes (whole
// or overlapping) are passed on once, and the frames get the time of the
// segment that completed them.
func TestH2C_OutOfOrderAndRetransmitted(t *testing.T) {
	evs := readH2C(t, func(b *builder) {
		k := b.open(0, c1, s1, 4_294_967_000, 900) // the client's sequence numbers wrap
		h := newH2(t)
		h.request(1, "/conform.Echo/Unary")
		cs := segments(h.takeClient(), 20)
		seq := k.cseq
		// Every segment but the first, last first; then the first: all whole at 10 ms.
		for i := len(cs) - 1; i >= 1; i-- {
			b.tcp(time.Duration(3+len(cs)-1-i)*ms/4, c1, s1, seq+uint32(20*i), k.sseq, "PA", cs[i])
		}
		b.tcp(10*ms, c1, s1, seq, k.sseq, "PA", cs[0])
		b.tcp(11*ms, c1, s1, seq, k.sseq, "PA", cs[0])                           // a retransmission
		b.tcp(12*ms, c1, s1, seq+10, k.sseq, "PA", append(cs[0][10:], cs[1]...)) // overlapping
		h.respond(1, "0", "")
		k.send(20*ms, false, h.takeServer(), 7)
	})
	want := []trace.Event{prefaceEv(10 * ms), resultEv(20*ms, "r1", "/conform.Echo/Unary", "OK", "")}
	if diff := cmp.Diff(want, rpcEvents(evs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := notes(evs); len(n) > 0 {
		t.Errorf("notes %q, want none", n)
	}
}

// TestH2C_GapEndsDecoding verifies a segment the capture missed ends the
// decoding of its connection with a note, and a segment cut by the snap
// length too; the attempts are still read.
func TestH2C_GapEndsDecoding(t *testing.T) {
	tests := []struct {
		name string
		lose func(b *builder, k *tcpConn, client []byte)
		note string
	}{
		{"a segment missing", func(b *builder, k *tcpConn, client []byte) {
			cs := segments(client, 30)
			k.segment(3*ms, true, cs[0])
			k.cseq += uint32(len(cs[1])) // never captured
			for _, s := range cs[2:] {
				k.segment(4*ms, true, s)
			}
		}, "held after a hole"},
		{"a segment cut by the snap length", func(b *builder, k *tcpConn, client []byte) {
			k.segment(3*ms, true, client)
			b.cutLast(5)
		}, "cut 5 bytes off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, layers.LinkTypeEthernet)
			k := b.open(0, c1, s1, 100, 900)
			h := newH2(t)
			h.request(1, "/conform.Echo/Unary")
			tc.lose(b, k, h.takeClient())
			h.respond(1, "0", "")
			k.send(5*ms, false, h.takeServer(), 1400)
			c, err := Read("gap.pcap", bytes.NewReader(b.pcap()))
			if err != nil {
				t.Fatal(err)
			}
			if r := trace.Select(c.Events, trace.OfKind(trace.KindRPCResult)); len(r) != 0 {
				t.Errorf("rpc results %v, want none after the gap", r)
			}
			n := notes(c.Events)
			if len(n) != 1 || !strings.Contains(n[0], tc.note) || !strings.Contains(n[0], "stops here") {
				t.Errorf("notes %q, want one saying %q and that decoding stops", n, tc.note)
			}
			if len(trace.Select(c.Events, trace.OfKind(trace.KindSYN, trace.KindSYNACK))) != 2 {
				t.Errorf("the attempt's SYN and SYN-ACK are missing: %v", c.Events)
			}
		})
	}
}

// TestH2C_NotH2C verifies a connection that does not begin with the client
// preface (TLS here) is left alone: no preface, no RPC, no note.
func TestH2C_NotH2C(t *testing.T) {
	evs := readH2C(t, func(b *builder) {
		k := b.open(0, c1, s1, 100, 900)
		k.send(3*ms, true, []byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 a TLS client hello"), 1400)
		k.send(4*ms, false, []byte("\x16\x03\x03\x00\x7a\x02 a TLS server hello"), 1400)
	})
	if r := rpcEvents(evs); len(r) != 0 {
		t.Errorf("got %v, want no preface nor result", r)
	}
	if n := notes(evs); len(n) > 0 {
		t.Errorf("notes %q, want none", n)
	}
}

// TestH2C_ResetNotesOpenRPCs verifies an RST that closes a connection
// ends its decoding, with a note for each RPC it leaves without a result.
func TestH2C_ResetNotesOpenRPCs(t *testing.T) {
	evs := readH2C(t, func(b *builder) {
		k := b.open(0, c1, s1, 100, 900)
		h := newH2(t)
		h.request(1, "/conform.Echo/Unary")
		k.send(3*ms, true, h.takeClient(), 1400)
		b.tcp(4*ms, s1, c1, k.sseq, k.cseq, "R", nil)
	})
	n := notes(evs)
	if len(n) != 1 || !strings.Contains(n[0], "r1 (/conform.Echo/Unary, stream 1") || !strings.Contains(n[0], "when the connection was reset") {
		t.Errorf("notes %q, want one for r1 left without a result by the reset", n)
	}
	if r := trace.Select(evs, trace.OfKind(trace.KindRPCResult)); len(r) != 0 {
		t.Errorf("results %v, want none", r)
	}
}
