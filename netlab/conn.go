package netlab

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
)

// http2Preface is what every HTTP/2 client sends first (RFC 9113, 3.4).
var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// observedListener reports accepts, parks connections to a stalled address,
// and hands every other connection to the server wrapped for the preface.
type observedListener struct {
	net.Listener
	b    *Backend
	addr netip.AddrPort
}

func (l *observedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.b.rec.add(Event{T: l.b.rec.now(), Kind: EventAccept, Backend: l.b.name, Addr: l.addr, Peer: addrPortOf(c.RemoteAddr())})
		l.b.track(l.addr, c)
		if l.b.stalled(l.addr) {
			l.park(c)
			continue
		}
		return &observedConn{Conn: c, l: l}, nil
	}
}

// park holds a stalled connection open without ever answering it, reading
// and discarding until the client gives up or the backend closes it.
func (l *observedListener) park(c net.Conn) {
	l.b.serving.Add(1)
	go func() {
		defer l.b.serving.Done()
		_, err := io.Copy(io.Discard, c)
		l.closedByPeer(c, err)
		c.Close()
		l.b.untrack(l.addr, c)
	}()
}

// observedConn reports when the HTTP/2 client preface has arrived.
type observedConn struct {
	net.Conn
	l *observedListener

	once    sync.Once
	ended   sync.Once // the read side ended: reported once
	prefix  []byte
	settled bool // preface seen or ruled out; only the server's reader touches it
}

func (c *observedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.ended.Do(func() { c.l.closedByPeer(c.Conn, err) })
	}
	if !c.settled && n > 0 {
		c.prefix = append(c.prefix, p[:n]...)
		if len(c.prefix) >= len(http2Preface) {
			c.settled = true
			if bytes.HasPrefix(c.prefix, http2Preface) {
				b := c.l.b
				b.rec.add(Event{T: b.rec.now(), Kind: EventPreface, Backend: b.name, Addr: c.l.addr, Peer: addrPortOf(c.RemoteAddr())})
			}
			c.prefix = nil
		}
	}
	return n, err
}

// closedByPeer reports that the client closed connection c, when the read
// that ended with err (nil: io.Copy's clean end) says so: the client's FIN
// or reset, not the backend closing c itself (net.ErrClosed: the server
// stopped, the backend went down, the lab closed).
func (l *observedListener) closedByPeer(c net.Conn, err error) {
	if errors.Is(err, net.ErrClosed) {
		return
	}
	l.b.rec.add(Event{T: l.b.rec.now(), Kind: EventConnClose, Backend: l.b.name, Addr: l.addr, Peer: addrPortOf(c.RemoteAddr())})
}

func (c *observedConn) Close() error {
	c.once.Do(func() { c.l.b.untrack(c.l.addr, c.Conn) })
	return c.Conn.Close()
}
