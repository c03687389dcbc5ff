package recorder

import (
	"slices"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/trace"
)

// subConn wraps the channel's SubConn. It embeds it, as grpc-go requires,
// so producers (GetOrBuildProducer) reach the channel's own; the recorder's
// picker unwraps it before the channel sees a pick.
type subConn struct {
	balancer.SubConn
	r        *recorder
	id       string
	listener func(balancer.SubConnState)

	// addrs is touched only by the child, which the channel serializes.
	addrs []string
	// state is the last state delivered; the picker reads it.
	state    atomic.Int32
	shutdown atomic.Bool
}

var _ balancer.SubConn = (*subConn)(nil)

// unwrap returns the channel's SubConn behind sc.
func unwrap(sc balancer.SubConn) balancer.SubConn {
	if w, ok := sc.(*subConn); ok {
		return w.SubConn
	}
	return sc
}

// String names the subchannel as the trace does.
func (sc *subConn) String() string { return sc.id }

// Connect is recorded on every call, as the simulator does.
func (sc *subConn) Connect() {
	sc.r.emit(trace.Event{Kind: trace.KindSubchannelConnect, Subchannel: sc.id})
	sc.SubConn.Connect()
}

// Shutdown is recorded as subchannel-shutdown; the SHUTDOWN state that
// follows is delivered to the child but not recorded again.
func (sc *subConn) Shutdown() {
	if !sc.shutdown.Swap(true) {
		sc.r.emit(trace.Event{Kind: trace.KindSubchannelShutdown, Subchannel: sc.id})
	}
	sc.SubConn.Shutdown()
}

// UpdateAddresses is recorded as subchannel-addresses when the list changes.
func (sc *subConn) UpdateAddresses(addrs []resolver.Address) {
	next := addrStrings(addrs)
	if !slices.Equal(next, sc.addrs) {
		sc.addrs = next
		sc.r.emit(trace.Event{Kind: trace.KindSubchannelAddrs, Subchannel: sc.id, Addrs: next})
	}
	sc.SubConn.UpdateAddresses(addrs)
}

// RegisterHealthListener wraps the child's listener so that every health
// update is recorded as subchannel-health.
func (sc *subConn) RegisterHealthListener(l func(balancer.SubConnState)) {
	if l == nil {
		sc.SubConn.RegisterHealthListener(nil)
		return
	}
	sc.SubConn.RegisterHealthListener(func(s balancer.SubConnState) {
		// Like the simulator's, the event names the state, not the error.
		sc.r.emit(trace.Event{Kind: trace.KindSubchannelHealth, Subchannel: sc.id, Addr: sc.readyAddr(), State: s.ConnectivityState.String()})
		l(s)
	})
}

// onState is the StateListener given to the channel: it records the state
// (subchannel-state) and passes it on.
func (sc *subConn) onState(s balancer.SubConnState) {
	sc.state.Store(int32(s.ConnectivityState))
	if s.ConnectivityState != connectivity.Shutdown || !sc.shutdown.Load() {
		e := trace.Event{Kind: trace.KindSubchannelState, Subchannel: sc.id, State: s.ConnectivityState.String()}
		if s.ConnectivityState == connectivity.Ready {
			e.Addr = sc.readyAddr()
		}
		if s.ConnectionError != nil {
			e.Err = s.ConnectionError.Error()
		}
		sc.r.emit(e)
	}
	if sc.listener != nil {
		sc.listener(s)
	}
}

// readyAddr is the address a READY subchannel is connected to, when the
// balancer API lets the recorder know it: only with a single address.
func (sc *subConn) readyAddr() string {
	if len(sc.addrs) == 1 {
		return sc.addrs[0]
	}
	return ""
}

func (sc *subConn) connectivityState() connectivity.State {
	return connectivity.State(sc.state.Load())
}
