package pcap

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// conn is one TCP connection a client opened, its payload followed in
// order in each direction for as long as it decodes as gRPC over h2c.
type conn struct {
	key      connKey
	isn      uint32 // the client's initial sequence number
	up, down stream
	h2       *h2c // nil once decoding has stopped
}

func newConn(key connKey, isn uint32) *conn {
	c := &conn{key: key, isn: isn, h2: newH2C(key)}
	c.up.start(isn)
	return c
}

// segment passes a segment's payload through its direction's stream to
// the HTTP/2 decoder; any problem stops decoding of the connection.
func (c *conn) segment(r *reader, f *frame, dir direction, pk packet) {
	if c.h2 == nil {
		return
	}
	s := &c.up
	if dir == down {
		s = &c.down
	}
	err := s.add(pk.tcp.Seq, pk.payload, pk.missing, func(b []byte) error { return c.h2.feed(r, f, dir, b) })
	if err != nil {
		c.stop(r, f, err)
	}
}

// stop ends decoding of the connection, with a note saying why (none when
// the connection is simply not h2c).
func (c *conn) stop(r *reader, f *frame, err error) {
	if !errors.Is(err, errNotH2C) {
		r.note(f, "%s to %s: %v; decoding of this connection stops here", c.key.client, c.key.server, err)
	}
	c.h2, c.up.held, c.down.held = nil, nil, nil
}

// end is called when the capture ends: bytes still held beyond a hole are
// a gap the capture never filled.
func (c *conn) end(r *reader, last *frame) {
	if c.h2 == nil {
		return
	}
	for _, s := range []*stream{&c.up, &c.down} {
		if s.heldBytes > 0 {
			c.stop(r, last, fmt.Errorf("the capture ends with %d bytes held after a hole at sequence number %d "+
				"(a segment the capture missed)", s.heldBytes, s.next))
			return
		}
	}
	c.h2.end(r, last, "by the end of the capture")
}

// reset ends decoding when an RST closes the connection: what it still
// holds is freed, and RPCs without a result are noted.
func (c *conn) reset(r *reader, f *frame) {
	if c.h2 == nil {
		return
	}
	c.h2.end(r, f, "when the connection was reset")
	c.h2, c.up.held, c.down.held = nil, nil, nil
}

// stream is one direction of a connection: its bytes put back in order.
// Retransmitted bytes are passed on once; bytes beyond a hole are held
// until the hole fills.
type stream struct {
	open      bool   // its SYN was seen: next is known
	next      uint32 // sequence number of the next byte to pass on
	held      []held // segments beyond a hole
	heldBytes int
}

type held struct {
	seq  uint32
	data []byte
}

// maxHeld bounds the bytes held beyond a hole: a hole that stays open that
// long is a segment the capture missed.
const maxHeld = 4 << 20

// start sets the stream's initial sequence number, from its SYN.
func (s *stream) start(isn uint32) {
	if !s.open {
		s.open, s.next = true, isn+1
	}
}

// add takes a segment's payload (seq: its first byte's sequence number;
// missing: bytes the capture cut off its end) and passes on, through
// deliver, the bytes now in order.
func (s *stream) add(seq uint32, data []byte, missing int, deliver func([]byte) error) error {
	if !s.open {
		return errors.New("payload from the server, but the capture has no SYN-ACK to place it by")
	}
	rel := int64(int32(seq - s.next)) // where the segment starts, relative to next
	end := rel + int64(len(data))
	switch {
	case missing > 0 && end+int64(missing) > 0:
		return fmt.Errorf("the capture cut %d bytes off a segment's payload (a snap length too small: tcpdump -s 0 keeps it whole)", missing)
	case end <= 0:
		return nil // bytes already passed on: a retransmission
	case rel > 0:
		return s.hold(seq, data)
	}
	if err := s.pass(data[-rel:], deliver); err != nil {
		return err
	}
	return s.drain(deliver)
}

func (s *stream) pass(b []byte, deliver func([]byte) error) error {
	s.next += uint32(len(b))
	return deliver(b)
}

// hold keeps a copy of a segment that starts beyond a hole.
func (s *stream) hold(seq uint32, data []byte) error {
	if s.heldBytes+len(data) > maxHeld {
		return fmt.Errorf("%d bytes arrived after a hole at sequence number %d that never filled (a segment the capture missed)",
			s.heldBytes+len(data), s.next)
	}
	s.held = append(s.held, held{seq: seq, data: bytes.Clone(data)})
	s.heldBytes += len(data)
	return nil
}

// drain passes on the held segments the stream has reached, until none
// is left that starts at or before next.
func (s *stream) drain(deliver func([]byte) error) error {
	for {
		i := slices.IndexFunc(s.held, func(h held) bool { return int32(h.seq-s.next) <= 0 })
		if i < 0 {
			return nil
		}
		h := s.held[i]
		s.held = slices.Delete(s.held, i, i+1)
		s.heldBytes -= len(h.data)
		rel := int64(int32(h.seq - s.next))
		if rel+int64(len(h.data)) <= 0 {
			continue
		}
		if err := s.pass(h.data[-rel:], deliver); err != nil {
			return err
		}
	}
}
