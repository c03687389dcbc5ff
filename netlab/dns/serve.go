package dns

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"
)

// tcpIdle is how long a TCP connection may wait for its next query.
const tcpIdle = 10 * time.Second

// ServePacket answers queries arriving on pc (UDP) until Close. It returns at
// once; the server owns pc from then on.
func (s *Server) ServePacket(pc net.PacketConn) error {
	if !s.track(pc.Close) {
		pc.Close()
		return errClosed
	}
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		buf := make([]byte, 65535)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				if !isClosedErr(err) {
					s.log.Error("dns: udp read", "err", err)
				}
				return
			}
			from := addrPortOf(addr)
			if reply, ok := s.answer(buf[:n], "udp", from, maxUDP); ok {
				if _, err := pc.WriteTo(reply, addr); err != nil {
					s.log.Debug("dns: udp write", "to", from, "err", err)
				}
			}
		}
	}()
	return nil
}

// ServeListener answers queries on connections accepted from ln (TCP, RFC
// 1035 section 4.2.2: each message preceded by its length in two bytes;
// several queries per connection) until Close. It returns at once; the
// server owns ln from then on.
func (s *Server) ServeListener(ln net.Listener) error {
	if !s.track(ln.Close) {
		ln.Close()
		return errClosed
	}
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				if !isClosedErr(err) {
					s.log.Error("dns: tcp accept", "err", err)
				}
				return
			}
			if !s.track(c.Close) {
				c.Close()
				return
			}
			s.serving.Add(1)
			go func() {
				defer s.serving.Done()
				defer c.Close()
				s.serveConn(c)
			}()
		}
	}()
	return nil
}

func (s *Server) serveConn(c net.Conn) {
	from := addrPortOf(c.RemoteAddr())
	var lenBuf [2]byte
	buf := make([]byte, 65535)
	for {
		_ = c.SetReadDeadline(time.Now().Add(tcpIdle))
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return // EOF, idle or closed: the client asks again on a new connection
		}
		n := int(binary.BigEndian.Uint16(lenBuf[:]))
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			return
		}
		reply, ok := s.answer(buf[:n], "tcp", from, 0)
		if !ok {
			continue
		}
		out := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reply)), uint16(len(reply)))
		if _, err := c.Write(append(out, reply...)); err != nil {
			return
		}
	}
}

var errClosed = errors.New("dns: server closed")

// track registers something Close must close; false if already closed.
// Connections stay registered until Close (a test server sees few).
func (s *Server) track(closer func() error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closers = append(s.closers, closer)
	return true
}

func isClosedErr(err error) bool { return errors.Is(err, net.ErrClosed) }

func addrPortOf(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.AddrPort()
	case *net.TCPAddr:
		return a.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}
