package sim

import (
	"errors"
	"slices"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/trace"
)

// subConn is a simulated subchannel. All its fields are guarded by w.mu.
type subConn struct {
	balancer.SubConn // required by grpc-go; every method used is overridden
	w                *Channel
	id               string
	addrs            []string
	listener         func(balancer.SubConnState)

	state     connectivity.State // the subchannel's own state
	delivered connectivity.State // the last state the policy was told
	shutdown  bool               // Shutdown was called
	finished  bool               // SHUTDOWN was delivered: nothing more is
	retries   int                // consecutive failed attempts (backoff index)
	att       *attempt           // the connection attempt under way
	conn      *conn              // the live connection while READY
	backoff   *simTimer          // the backoff after a failed attempt
	health    healthWatch
}

// conn is an established connection (TCP and HTTP/2 up) to addr.
type conn struct {
	addr  string
	alive bool
}

// healthWatch is the registered health listener; gen changes whenever the
// listener is replaced or invalidated by a state change.
type healthWatch struct {
	gen      uint64
	listener func(balancer.SubConnState)
}

var _ balancer.SubConn = (*subConn)(nil)

var errConnectionLost = errors.New("connection lost")

// Connect starts a connection attempt if the subchannel is IDLE; otherwise,
// like grpc-go's, it does nothing. Every call is recorded.
func (sc *subConn) Connect() {
	w := sc.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || sc.shutdown {
		return
	}
	w.recordLocked(trace.Event{Kind: trace.KindSubchannelConnect, Subchannel: sc.id})
	if sc.state == connectivity.Idle {
		sc.startAttemptLocked()
	}
}

// Shutdown stops everything the subchannel does and delivers one final
// SHUTDOWN state (balancer.SubConn's contract); nothing is delivered after it.
func (sc *subConn) Shutdown() {
	w := sc.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || sc.shutdown {
		return
	}
	sc.shutdown = true
	sc.stopAttemptLocked()
	sc.backoff.stopLocked(w)
	sc.backoff = nil
	if sc.conn != nil {
		sc.conn.alive = false
		sc.conn = nil
	}
	sc.state = connectivity.Shutdown
	w.recordLocked(trace.Event{Kind: trace.KindSubchannelShutdown, Subchannel: sc.id})
	sc.deliverLocked(balancer.SubConnState{ConnectivityState: connectivity.Shutdown})
}

// UpdateAddresses follows grpc-go's addrConn: a READY connection whose
// address is still listed is kept; a connection or attempt to an address no
// longer listed is abandoned and a new attempt starts.
func (sc *subConn) UpdateAddresses(addrs []resolver.Address) {
	w := sc.w
	w.mu.Lock()
	defer w.mu.Unlock()
	next := addrStrings(addrs)
	if w.closed || sc.shutdown || slices.Equal(next, sc.addrs) {
		return
	}
	sc.addrs = next
	w.recordLocked(trace.Event{Kind: trace.KindSubchannelAddrs, Subchannel: sc.id, Addrs: next})
	switch sc.state {
	case connectivity.Ready:
		if slices.Contains(next, sc.conn.addr) {
			return
		}
		sc.conn.alive = false
		sc.conn = nil
	case connectivity.Connecting:
		sc.stopAttemptLocked()
	default:
		return
	}
	if len(next) == 0 {
		sc.setStateLocked(connectivity.Idle, nil)
		return
	}
	sc.startAttemptLocked()
}

// RegisterHealthListener delivers the health state the connected address
// serves, and later changes made with SetHealth, to listener. Like grpc-go it
// is ignored unless the policy has been told the subchannel is READY, and a
// new registration (or a state change) silences the previous listener.
func (sc *subConn) RegisterHealthListener(listener func(balancer.SubConnState)) {
	w := sc.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || sc.finished || sc.delivered != connectivity.Ready || sc.conn == nil {
		return
	}
	sc.health.gen++
	sc.health.listener = listener
	if listener != nil {
		sc.sendHealthLocked(w.healthLocked(sc.conn.addr))
	}
}

// GetOrBuildProducer is not simulated: there is no transport to build
// producers (ORCA, health streams) on. It returns a nil Producer.
func (sc *subConn) GetOrBuildProducer(balancer.ProducerBuilder) (balancer.Producer, func()) {
	return nil, func() {}
}

// String names the subchannel as the trace does.
func (sc *subConn) String() string { return sc.id }

// setStateLocked records a state change and queues its delivery.
func (sc *subConn) setStateLocked(s connectivity.State, err error) {
	if sc.state == s {
		return
	}
	sc.state = s
	e := trace.Event{Kind: trace.KindSubchannelState, Subchannel: sc.id, State: s.String()}
	if err != nil {
		e.Err = err.Error()
	}
	if s == connectivity.Ready {
		e.Addr = sc.conn.addr
	}
	sc.w.recordLocked(e)
	sc.deliverLocked(balancer.SubConnState{ConnectivityState: s, ConnectionError: err})
}

// deliverLocked queues a call of the StateListener, serialized with every
// other call into the balancer. Delivering a state silences the health
// listener, as in grpc-go.
func (sc *subConn) deliverLocked(scs balancer.SubConnState) {
	w := sc.w
	w.ser.enqueue(func() {
		w.mu.Lock()
		last := scs.ConnectivityState == connectivity.Shutdown
		if w.closed || sc.finished || (sc.shutdown && !last) {
			w.mu.Unlock()
			return
		}
		sc.finished = last
		sc.delivered = scs.ConnectivityState
		sc.health = healthWatch{gen: sc.health.gen + 1}
		l := sc.listener
		w.mu.Unlock()
		if l != nil {
			l(scs)
		}
	})
}

// sendHealthLocked queues a health update for the current listener, sent by
// the address's health service now (recorded as health-sent, as the lab's
// backends record what their Watch sends) when health checking is on.
func (sc *subConn) sendHealthLocked(s connectivity.State) {
	w, gen := sc.w, sc.health.gen
	if !w.opts.NoHealthCheck {
		w.recordLocked(trace.Event{Source: trace.SourceBackend, Kind: trace.KindHealthSent, Addr: sc.conn.addr, Service: w.opts.HealthService, State: s.String()})
	}
	w.ser.enqueue(func() {
		w.mu.Lock()
		if w.closed || sc.finished || sc.health.gen != gen || sc.conn == nil {
			w.mu.Unlock()
			return
		}
		w.recordLocked(trace.Event{Kind: trace.KindSubchannelHealth, Subchannel: sc.id, Addr: sc.conn.addr, State: s.String()})
		l := sc.health.listener
		w.mu.Unlock()
		scs := balancer.SubConnState{ConnectivityState: s}
		if s == connectivity.TransientFailure {
			scs.ConnectionError = errors.New("health check failed: NOT_SERVING")
		}
		l(scs)
	})
}

// loseConnLocked handles the loss of a READY connection: the subchannel goes
// IDLE and waits for Connect.
func (sc *subConn) loseConnLocked() {
	sc.conn.alive = false
	sc.conn = nil
	if sc.w.opts.SubchannelReResolves {
		sc.w.resolveNowLocked(sc.id)
	}
	sc.setStateLocked(connectivity.Idle, errConnectionLost)
}
