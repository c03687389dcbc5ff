package recorder

import (
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/trace"
)

// childCC is the balancer.ClientConn the child is built with. grpc-go
// requires implementations to embed the interface: what is not overridden
// here (Target, MetricsRecorder, …) goes straight to the channel.
type childCC struct {
	balancer.ClientConn
	r *recorder
}

var (
	_ balancer.ClientConn = (*childCC)(nil)
	_ clock.Provider      = (*childCC)(nil)
)

// Clock gives seam-aware children the recorder's clock, which forwards the
// channel's clock when it carries one.
func (cc *childCC) Clock() clock.Clock { return cc.r.clk }

// NewSubConn creates the subchannel through the channel, wrapping it and its
// StateListener (recorded as subchannel-new, then subchannel-state).
func (cc *childCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	sc := &subConn{r: cc.r, addrs: addrStrings(addrs), listener: opts.StateListener}
	opts.StateListener = sc.onState
	inner, err := cc.ClientConn.NewSubConn(addrs, opts)
	if err != nil {
		return nil, err
	}
	sc.SubConn = inner
	sc.id = cc.r.newSubConnID()
	cc.r.emit(trace.Event{Kind: trace.KindSubchannelNew, Subchannel: sc.id, Addrs: sc.addrs})
	return sc, nil
}

// RemoveSubConn is the deprecated form of SubConn.Shutdown.
func (cc *childCC) RemoveSubConn(sc balancer.SubConn) { sc.Shutdown() }

// UpdateAddresses is the deprecated form of SubConn.UpdateAddresses.
func (cc *childCC) UpdateAddresses(sc balancer.SubConn, addrs []resolver.Address) {
	sc.UpdateAddresses(addrs)
}

// UpdateState records balancer-state and hands the channel a picker that
// records every pick.
func (cc *childCC) UpdateState(s balancer.State) {
	cc.r.emit(trace.Event{Kind: trace.KindBalancerState, State: s.ConnectivityState.String()})
	if s.Picker != nil {
		s.Picker = &picker{r: cc.r, p: s.Picker}
	}
	cc.ClientConn.UpdateState(s)
}

// ResolveNow records the policy's request for re-resolution.
func (cc *childCC) ResolveNow(o resolver.ResolveNowOptions) {
	cc.r.emit(trace.Event{Kind: trace.KindResolveNow})
	cc.ClientConn.ResolveNow(o)
}
