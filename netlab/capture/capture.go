package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Option configures a Capture.
type Option func(*config)

type config struct {
	onPacket func(Packet)
	deadline time.Duration
	rcvBuf   int // socket receive buffer; tests make it small
}

// ErrDropped is returned (wrapped) by Close when the kernel dropped frames
// the filter passed because the socket's buffer was full: some packets, and
// so some attempts or outcomes, are missing.
var ErrDropped = errors.New("capture: the kernel dropped frames; the record is incomplete")

// OnPacket sets a function called for every captured packet, in the order
// the kernel queued them, from the capture's reader goroutine, after the
// packet has been applied to Attempts. It must not block for long (the
// kernel drops what does not fit the socket's buffer) and must not call
// Close.
func OnPacket(f func(Packet)) Option {
	return func(c *config) { c.onPacket = f }
}

// AnswerDeadline makes an attempt Unanswered when no SYN-ACK or RST was
// stamped by the kernel within d of its first SYN. Without it, only Close
// makes pending attempts Unanswered.
func AnswerDeadline(d time.Duration) Option {
	return func(c *config) { c.deadline = d }
}

// Capture records SYN, SYN-ACK and RST segments on one interface of one
// network namespace.
type Capture struct {
	file     *os.File
	raw      syscall.RawConn
	loopback bool
	onPacket func(Packet)
	done     chan struct{} // closed when the reader has returned
	readErr  error         // written by the reader before done is closed

	mu sync.Mutex
	tr *tracker

	closeOnce sync.Once
	closeErr  error
}

// Open starts capturing on ifname, an Ethernet (or loopback) interface in
// namespace ns. The socket is opened inside ns on a throwaway thread; the
// calling thread's namespace is never changed. Close releases it.
func Open(ns netns.NsHandle, ifname string, opts ...Option) (*Capture, error) {
	cfg := config{rcvBuf: defaultRcvBuf}
	for _, o := range opts {
		o(&cfg)
	}
	l, err := lookupLink(ns, ifname)
	if err != nil {
		return nil, err
	}
	fd, err := openSocket(ns, l.index, cfg.rcvBuf)
	if err != nil {
		return nil, err
	}
	c, err := newCapture(fd, ifname, l, cfg)
	if err != nil {
		return nil, err
	}
	go c.run()
	return c, nil
}

// newCapture wraps fd in an os.File so that the Go runtime's poller waits
// for it and Close can wake a blocked read.
func newCapture(fd int, ifname string, l link, cfg config) (*Capture, error) {
	file := os.NewFile(uintptr(fd), "capture:"+ifname)
	raw, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("capture: %w", err)
	}
	return &Capture{
		file:     file,
		raw:      raw,
		loopback: l.loopback,
		onPacket: cfg.onPacket,
		done:     make(chan struct{}),
		tr:       newTracker(cfg.deadline),
	}, nil
}

// Attempts returns every connection attempt seen so far, in the order their
// first SYN was read, with its outcome. With an AnswerDeadline, attempts
// whose deadline has passed on the wall clock are reported Unanswered.
func (c *Capture) Attempts() []Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tr.expire(time.Now())
	return c.tr.snapshot()
}

// Close stops the reader after it has read every frame the kernel queued
// before Close, waits for it, releases the socket and marks attempts still
// pending Unanswered. It returns the first error the reader met, and
// ErrDropped if the kernel dropped frames. It is idempotent; Attempts stays
// usable afterwards.
func (c *Capture) Close() error {
	c.closeOnce.Do(func() {
		// An expired deadline wakes the reader, which drains and returns.
		derr := c.file.SetReadDeadline(time.Unix(1, 0))
		<-c.done
		serr := c.checkDrops()
		cerr := c.file.Close()
		c.mu.Lock()
		c.tr.closeAll()
		c.mu.Unlock()
		c.closeErr = errors.Join(c.readErr, derr, serr, cerr)
	})
	return c.closeErr
}

// checkDrops reads the socket's counters (PACKET_STATISTICS) and reports
// ErrDropped if any frame was dropped since the socket was opened.
func (c *Capture) checkDrops() error {
	var stats *unix.TpacketStats
	var err error
	cerr := c.raw.Control(func(fd uintptr) {
		stats, err = unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS)
	})
	if err = errors.Join(cerr, err); err != nil {
		return fmt.Errorf("capture: reading drop counters: %w", err)
	}
	if stats.Drops > 0 {
		return fmt.Errorf("%w (%d of %d)", ErrDropped, stats.Drops, stats.Packets)
	}
	return nil
}

// reader holds one recvmsg's buffers and result.
type reader struct {
	buf, oob []byte
	n, oobn  int
	from     unix.Sockaddr
	err      error
}

// recv reads one frame without blocking. It reports false only when the
// queue is empty, which makes the poller wait for the socket.
func (r *reader) recv(fd uintptr) bool {
	r.n, r.oobn, _, r.from, r.err = unix.Recvmsg(int(fd), r.buf, r.oob, unix.MSG_DONTWAIT)
	return r.err != unix.EAGAIN
}

// run reads frames until Close sets the read deadline, then drains.
func (c *Capture) run() {
	defer close(c.done)
	r := &reader{buf: make([]byte, snapLen+64), oob: make([]byte, 2*unix.CmsgSpace(16))}
	for {
		if err := c.raw.Read(r.recv); err != nil {
			c.drain(r)
			return
		}
		if !c.consume(r) {
			return
		}
	}
}

// drain handles every frame still queued, without waiting for more.
func (c *Capture) drain(r *reader) {
	_ = c.raw.Control(func(fd uintptr) {
		for r.recv(fd) && c.consume(r) {
		}
	})
}

// consume handles the result of a finished recv and reports whether to go
// on reading. ENETDOWN is reported once when the interface goes down; the
// socket stays usable.
func (c *Capture) consume(r *reader) bool {
	switch r.err {
	case nil:
		c.handle(r.buf[:r.n], r.oob[:r.oobn], r.from)
		return true
	case unix.EINTR, unix.ENETDOWN:
		return true
	}
	c.readErr = fmt.Errorf("capture: recvmsg: %w", r.err)
	return false
}

// handle decodes one frame, applies it to the attempts and passes it on.
func (c *Capture) handle(frame, oob []byte, from unix.Sockaddr) {
	if c.loopback && outgoing(from) {
		return // loopback shows every frame twice: once out, once in
	}
	p, ok := decode(frame)
	if !ok {
		return
	}
	p.Kernel = kernelTime(oob)
	c.mu.Lock()
	p = c.tr.apply(p)
	c.mu.Unlock()
	if c.onPacket != nil {
		c.onPacket(p)
	}
}

func outgoing(from unix.Sockaddr) bool {
	ll, ok := from.(*unix.SockaddrLinklayer)
	return ok && ll.Pkttype == unix.PACKET_OUTGOING
}

// kernelTime reads the SCM_TIMESTAMPNS control message. The kernel always
// sends one once SO_TIMESTAMPNS is set; the receive time stands in should
// it ever be missing.
func kernelTime(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Now().Round(0)
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec)
		}
	}
	return time.Now().Round(0)
}
