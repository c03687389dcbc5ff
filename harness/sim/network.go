package sim

import (
	"errors"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/conformlab/conform/harness/trace"
)

// Fault is what the network does to connections to one address.
type Fault int

// The faults of DESIGN.md ("Faults per address").
const (
	FaultNone  Fault = iota
	FaultDrop        // SYNs are lost: connect hangs, the kernel retransmits
	FaultReset       // SYNs are answered with a TCP reset
	FaultStall       // TCP is accepted, HTTP/2 never answers
	FaultDown        // nothing listens: refused, and live connections die
	// FaultFailRPCs leaves connections alone; the backend answers every RPC
	// on the address with a status code (Channel.FailRPCs).
	FaultFailRPCs
)

func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultDrop:
		return "drop"
	case FaultReset:
		return "reset"
	case FaultStall:
		return "stall"
	case FaultDown:
		return "down"
	case FaultFailRPCs:
		return "fail_rpcs"
	}
	return "unknown"
}

// synRetransmits are the gaps between a SYN and its next retransmission:
// Linux starts at a 1 s RTO and doubles it, so retransmissions go out about
// 1 s, 3 s, 7 s, 15 s, 31 s and 63 s after the first SYN (tcp_syn_retries=6)
// and connect gives up synGiveUp after the last one, 127 s after the first.
var synRetransmits = []time.Duration{
	1 * time.Second, 2 * time.Second, 4 * time.Second,
	8 * time.Second, 16 * time.Second, 32 * time.Second,
}

const synGiveUp = 64 * time.Second

var (
	errRefused         = errors.New("connection refused")
	errSYNTimeout      = errors.New("connection timed out")
	errConnectDeadline = errors.New("connect deadline exceeded")
)

// phase is where an attempt is with its current address.
type phase int

const (
	phaseSYN       phase = iota // SYN sent, no answer yet
	phaseHandshake              // TCP up, HTTP/2 handshake under way
	phaseStalled                // TCP up, HTTP/2 will never answer
)

// attempt is one connection attempt of a subchannel: its addresses in order,
// under one connect deadline (grpc-go's addrConn tries them the same way).
type attempt struct {
	sc       *subConn
	backoff  time.Duration // the backoff that follows if this attempt fails
	deadline *simTimer
	step     *simTimer // the next network event for the current address
	idx      int
	addr     string
	phase    phase
	retrans  int
	firstErr error
}

// startAttemptLocked moves the subchannel to CONNECTING and dials its first
// address. The connect deadline is Max(current backoff, MIN_CONNECT_TIMEOUT)
// (connection-backoff.md, "Proposed Backoff Algorithm").
func (sc *subConn) startAttemptLocked() {
	w := sc.w
	a := &attempt{sc: sc, backoff: w.opts.Backoff.Backoff(sc.retries, w.jitter)}
	sc.att = a
	sc.setStateLocked(connectivity.Connecting, nil)
	a.deadline = w.afterLocked("connect deadline", w.opts.Backoff.ConnectTimeout(a.backoff), a.deadlineLocked)
	a.dialLocked(0)
}

func (sc *subConn) stopAttemptLocked() {
	if a := sc.att; a != nil {
		a.deadline.stopLocked(sc.w)
		a.step.stopLocked(sc.w)
		sc.att = nil
	}
}

func (a *attempt) dialLocked(i int) {
	a.idx, a.addr, a.retrans = i, a.sc.addrs[i], 0
	a.synLocked()
}

// synLocked sends a SYN (a retransmission when a.retrans > 0) and schedules
// its fate under the fault the address has now.
func (a *attempt) synLocked() {
	w := a.sc.w
	a.phase = phaseSYN
	w.recordLocked(trace.Event{Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: a.addr, Subchannel: a.sc.id, Retransmit: a.retrans > 0})
	switch w.faultLocked(a.addr) {
	case FaultNone, FaultFailRPCs:
		a.step = w.afterLocked("syn-ack", w.opts.RTT, a.tcpUpLocked)
	case FaultStall:
		a.step = w.afterLocked("syn-ack", w.opts.RTT, a.stallLocked)
	case FaultReset, FaultDown:
		a.step = w.afterLocked("rst", w.opts.RTT, a.refusedLocked)
	case FaultDrop:
		if a.retrans < len(synRetransmits) {
			a.step = w.afterLocked("syn retransmission", synRetransmits[a.retrans], func() {
				a.retrans++
				a.synLocked()
			})
			return
		}
		a.step = w.afterLocked("syn give-up", synGiveUp, func() { a.failAddrLocked(errSYNTimeout) })
	}
}

func (a *attempt) recordAnswerLocked(k trace.Kind) {
	a.sc.w.recordLocked(trace.Event{Source: trace.SourceCapture, Kind: k, Addr: a.addr, Subchannel: a.sc.id})
}

// tcpUpLocked: the SYN was answered; HTTP/2 is ready one RTT later.
func (a *attempt) tcpUpLocked() {
	a.recordAnswerLocked(trace.KindSYNACK)
	a.phase = phaseHandshake
	a.step = a.sc.w.afterLocked("http2 ready", a.sc.w.opts.RTT, a.readyLocked)
}

// stallLocked: the SYN was answered but HTTP/2 never will be; the connect
// deadline ends the attempt.
func (a *attempt) stallLocked() {
	a.recordAnswerLocked(trace.KindSYNACK)
	a.phase = phaseStalled
	a.step = nil
}

func (a *attempt) refusedLocked() {
	a.recordAnswerLocked(trace.KindRST)
	a.failAddrLocked(errRefused)
}

// failAddrLocked moves on to the next address, or fails the attempt after
// the last one.
func (a *attempt) failAddrLocked(err error) {
	a.step = nil
	if a.firstErr == nil {
		a.firstErr = err
	}
	if a.idx+1 < len(a.sc.addrs) {
		a.dialLocked(a.idx + 1)
		return
	}
	a.failLocked()
}

// deadlineLocked: the connect deadline passed. The current address fails and
// so do the ones after it, at once and without a SYN (their deadline is past).
func (a *attempt) deadlineLocked() {
	a.deadline = nil
	a.step.stopLocked(a.sc.w)
	a.step = nil
	if a.firstErr == nil {
		a.firstErr = errConnectDeadline
	}
	a.failLocked()
}

// failLocked reports TRANSIENT_FAILURE with the first address's error, waits
// out the backoff and goes IDLE (grpc-go's addrConn; the subchannel does not
// reconnect by itself).
func (a *attempt) failLocked() {
	sc, w := a.sc, a.sc.w
	a.deadline.stopLocked(w)
	sc.att = nil
	if w.opts.SubchannelReResolves {
		w.resolveNowLocked(sc.id)
	}
	err := a.firstErr
	sc.setStateLocked(connectivity.TransientFailure, err)
	sc.backoff = w.afterLocked("backoff", a.backoff, func() {
		sc.backoff = nil
		sc.retries++
		sc.setStateLocked(connectivity.Idle, err)
	})
}

// readyLocked: HTTP/2 is up; the subchannel is READY and its backoff resets.
func (a *attempt) readyLocked() {
	sc := a.sc
	a.deadline.stopLocked(sc.w)
	sc.att = nil
	sc.retries = 0
	sc.conn = &conn{addr: a.addr, alive: true}
	sc.setStateLocked(connectivity.Ready, nil)
}

func (w *Channel) faultLocked(addr string) Fault {
	if _, owned := w.backends[addr]; !owned {
		return FaultDrop
	}
	return w.faults[addr]
}

// healthKey names what one address serves for one health service name.
type healthKey struct{ addr, service string }

// healthLocked is the health state a health listener on a connection to
// addr reports: what addr serves for the checked service name (SERVING,
// READY, until set), or the raw READY when health checking is off.
func (w *Channel) healthLocked(addr string) connectivity.State {
	if w.opts.NoHealthCheck {
		return connectivity.Ready
	}
	if s, ok := w.health[healthKey{addr, w.opts.HealthService}]; ok {
		return s
	}
	return connectivity.Ready
}

// downLocked applies FaultDown to addr: live connections to it die and
// handshakes under way with it fail.
func (w *Channel) downLocked(addr string) {
	for _, sc := range w.subConns {
		if sc.conn != nil && sc.conn.addr == addr {
			sc.loseConnLocked()
		}
		if a := sc.att; a != nil && a.addr == addr && a.phase != phaseSYN {
			a.step.stopLocked(w)
			a.failAddrLocked(errConnectionLost)
		}
	}
}
