package pcap

import (
	"net/netip"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/capture"
)

// connKey names a TCP connection by its addresses, client first.
type connKey struct {
	client, server netip.AddrPort
}

// direction is which way a segment goes on its connection.
type direction int

const (
	up   direction = iota // client to server
	down                  // server to client
)

// copyKey is a SYN, SYN-ACK or RST as it crosses interfaces unchanged.
type copyKey struct {
	src, dst netip.AddrPort
	seq      uint32
	kind     capture.Kind
}

type copySeen struct {
	iface uint64
	at    time.Time
}

// copyWindow: the same segment seen again on another interface within it
// is the same segment crossing the host (tcpdump -i any sees a bridged or
// routed packet on each interface), not a retransmission (which TCP sends
// after at least 200 ms, a SYN after 1 s).
const copyWindow = 100 * time.Millisecond

// kindOf classifies a segment's flags as the lab's capture does: RST wins
// over SYN; a SYN with ACK answers one.
func kindOf(t *layers.TCP) capture.Kind {
	switch {
	case t.RST:
		return capture.RST
	case t.SYN && t.ACK:
		return capture.SYNACK
	case t.SYN:
		return capture.SYN
	}
	return 0
}

// segment handles one TCP segment: its connection-attempt meaning, then
// its payload.
func (r *reader) segment(f *frame, pk packet) {
	r.tcpAny++
	kind := kindOf(pk.tcp)
	key, dir, ok := r.orient(pk, kind)
	if !ok {
		if kind == capture.RST {
			r.tally("rst-unknown", f, "RST segments of connections whose client the capture does not show were left out",
				pk.src.String()+" to "+pk.dst.String())
		}
		return
	}
	r.tcp++
	if kind != 0 {
		if r.isCopy(f, pk, kind) {
			r.tally("copies", f, "SYN, SYN-ACK or RST copies seen on a second interface were left out", pk.src.String()+" to "+pk.dst.String())
			return
		}
		r.control(f, pk, kind, key)
	}
	if c := r.conns[key]; c != nil && !pk.tcp.SYN && (len(pk.payload) > 0 || pk.missing > 0) {
		c.segment(r, f, dir, pk)
	}
}

// orient finds the connection of a segment and its direction: a SYN's
// sender is the client, a SYN-ACK's receiver; any other segment belongs to
// a connection already known, or has a client address at one end. It
// reports false for a segment that is not a client's.
func (r *reader) orient(pk packet, kind capture.Kind) (connKey, direction, bool) {
	switch kind {
	case capture.SYN:
		return connKey{pk.src, pk.dst}, up, r.client(pk.src.Addr())
	case capture.SYNACK:
		return connKey{pk.dst, pk.src}, down, r.client(pk.dst.Addr())
	}
	if k := (connKey{pk.src, pk.dst}); r.conns[k] != nil {
		return k, up, true
	}
	if k := (connKey{pk.dst, pk.src}); r.conns[k] != nil {
		return k, down, true
	}
	switch {
	case r.clients[pk.src.Addr().Unmap()]:
		return connKey{pk.src, pk.dst}, up, true
	case r.clients[pk.dst.Addr().Unmap()]:
		return connKey{pk.dst, pk.src}, down, true
	}
	return connKey{}, 0, false
}

// client reports whether a is a client's address that opens connections:
// one of Client's, or, without Client, any (a is then inferred to be a
// client).
func (r *reader) client(a netip.Addr) bool {
	a = a.Unmap()
	if r.cfg.clients != nil {
		return r.clients[a]
	}
	r.clients[a] = true
	return true
}

// isCopy reports whether this SYN, SYN-ACK or RST was just seen on another
// interface.
func (r *reader) isCopy(f *frame, pk packet, kind capture.Kind) bool {
	k := copyKey{pk.src, pk.dst, pk.tcp.Seq, kind}
	prev, ok := r.copies[k]
	if ok && prev.iface != pk.iface && f.at.Sub(prev.at).Abs() < copyWindow {
		return true
	}
	r.copies[k] = copySeen{iface: pk.iface, at: f.at}
	return false
}

// control records a SYN, SYN-ACK or RST as the lab does: an event with the
// server's address, the client's port and address, and the attempt it
// belongs to; and opens or updates the connection's byte streams.
func (r *reader) control(f *frame, pk packet, kind capture.Kind, key connKey) {
	p := r.attempts.Apply(capture.Packet{Kernel: f.at, Kind: kind, Src: pk.src, Dst: pk.dst, Seq: pk.tcp.Seq})
	if kind == capture.RST {
		if c := r.conns[key]; c != nil {
			c.reset(r, f)
		}
		if !p.Refusal {
			return // an abort of an established connection: no attempt's fate (trace.KindRST)
		}
	}
	r.emit(f.at, trace.Event{Source: trace.SourceCapture, Kind: eventKinds[kind], Addr: key.server.String(),
		Port: int(key.client.Port()), Peer: key.client.String(), Retransmit: p.Retransmit})
	switch kind {
	case capture.SYN:
		if c := r.conns[key]; c == nil || c.isn != pk.tcp.Seq {
			c = newConn(key, pk.tcp.Seq)
			r.conns[key] = c
			r.connList = append(r.connList, c)
		}
	case capture.SYNACK:
		if c := r.conns[key]; c != nil {
			c.down.start(pk.tcp.Seq)
		}
	}
}

var eventKinds = map[capture.Kind]trace.Kind{capture.SYN: trace.KindSYN, capture.SYNACK: trace.KindSYNACK, capture.RST: trace.KindRST}
