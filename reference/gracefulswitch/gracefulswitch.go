// Package gracefulswitch is the channel's side of changing its LB policy
// (L9, "Swapping out balancer"): when a new service config names another
// policy, the new one is built beside the old one, which keeps serving; the
// channel switches to the new one when it first says it may be picked from,
// then stops the old one. conform's root wrappers (the recorder, the
// simulator's channel) use it so that the reference changes policy the way
// the document says a channel does.
//
// A Balancer holds a current child and, during a switch, a pending one. The
// pending child's pickers are kept back while it reports CONNECTING and the
// current child is READY; the first other report (READY, TRANSIENT_FAILURE,
// IDLE), or the current child leaving READY, makes it current: its last
// picker is installed and the old child is closed, which shuts down its
// subchannels: those the new child does not use (subconn.go). The pending
// child asking for a subchannel to addresses the current one has a
// subchannel to is given that subchannel, connection and all, not a new
// one (L9, Swapping out balancer: "For connections already exist, they will
// be reused").
package gracefulswitch

import (
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/clock"
)

// Balancer is a balancer.Balancer that runs one child policy at a time and
// switches between them gracefully. Its zero value is not usable; use New.
type Balancer struct {
	cc   balancer.ClientConn
	opts balancer.BuildOptions

	mu      sync.Mutex
	current *child // nil before the first SwitchTo
	pending *child // nil unless a switch is under way
	closed  bool

	// The subchannels the children share (subconn.go).
	pool       []*shared
	due        []*subConn // users with news not yet delivered
	healthDue  []func()   // health news for users that joined a watch
	delivering bool       // deliverDue runs
}

var _ balancer.Balancer = (*Balancer)(nil)

// New returns a Balancer whose children report to cc. cc is handed to the
// children wrapped; its clock.Provider, if any, is forwarded.
func New(cc balancer.ClientConn, opts balancer.BuildOptions) *Balancer {
	return &Balancer{cc: cc, opts: opts}
}

// child is one child policy and the ClientConn it was built with.
type child struct {
	balancer.ClientConn // the Balancer's cc
	gs                  *Balancer
	name                string
	bal                 balancer.Balancer
	state               balancer.State // its last report
	reported            bool
}

var _ clock.Provider = (*child)(nil)

// Clock forwards the channel's clock to seam-aware children.
func (c *child) Clock() clock.Clock {
	if p, ok := c.ClientConn.(clock.Provider); ok {
		return p.Clock()
	}
	return nil
}

// Name is the builder name of the latest child: the pending one during a
// switch, else the current one ("" before the first SwitchTo).
func (gs *Balancer) Name() string {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if l := gs.latestLocked(); l != nil {
		return l.name
	}
	return ""
}

func (gs *Balancer) latestLocked() *child {
	if gs.pending != nil {
		return gs.pending
	}
	return gs.current
}

// SwitchTo makes b the policy the Balancer runs. The first call builds the
// current child. A later call naming the latest child's builder does
// nothing; one naming another builds a pending child (closing a pending one
// that never became current), which takes over as the package says. Calls
// into the Balancer, SwitchTo included, are serialized by the caller, as
// grpc-go's channel serializes calls into a balancer.
func (gs *Balancer) SwitchTo(b balancer.Builder) {
	gs.deliverDue()
	defer gs.deliverDue()
	gs.mu.Lock()
	if gs.closed {
		gs.mu.Unlock()
		return
	}
	if l := gs.latestLocked(); l != nil && l.name == b.Name() {
		gs.mu.Unlock()
		return
	}
	c := &child{ClientConn: gs.cc, gs: gs, name: b.Name()}
	var dropped *child
	if gs.current == nil {
		gs.current = c
	} else {
		dropped, gs.pending = gs.pending, c
	}
	gs.mu.Unlock()
	if dropped != nil {
		dropped.bal.Close()
	}
	// Built unlocked: a child may report its state from Build.
	bal := b.Build(c, gs.opts)
	gs.mu.Lock()
	c.bal = bal
	gs.mu.Unlock()
}

// latest is the child new input goes to.
func (gs *Balancer) latest() balancer.Balancer {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if l := gs.latestLocked(); l != nil {
		return l.bal
	}
	return nil
}

// UpdateClientConnState goes to the latest child.
func (gs *Balancer) UpdateClientConnState(s balancer.ClientConnState) error {
	gs.deliverDue()
	defer gs.deliverDue()
	b := gs.latest()
	if b == nil {
		return balancer.ErrBadResolverState
	}
	return b.UpdateClientConnState(s)
}

// ResolverError goes to the latest child.
func (gs *Balancer) ResolverError(err error) {
	gs.deliverDue()
	defer gs.deliverDue()
	if b := gs.latest(); b != nil {
		b.ResolverError(err)
	}
}

// UpdateSubConnState is deprecated in grpc-go and not called for
// subchannels created with a StateListener; it goes to both children, each
// of which ignores subchannels it did not create.
func (gs *Balancer) UpdateSubConnState(sc balancer.SubConn, s balancer.SubConnState) {
	gs.deliverDue()
	defer gs.deliverDue()
	gs.mu.Lock()
	var kids []balancer.Balancer
	for _, c := range []*child{gs.current, gs.pending} {
		if c != nil && c.bal != nil {
			kids = append(kids, c.bal)
		}
	}
	gs.mu.Unlock()
	for _, b := range kids {
		b.UpdateSubConnState(sc, s)
	}
}

// ExitIdle goes to the latest child.
func (gs *Balancer) ExitIdle() {
	gs.deliverDue()
	defer gs.deliverDue()
	if b := gs.latest(); b != nil {
		b.ExitIdle()
	}
}

// Close closes both children.
func (gs *Balancer) Close() {
	gs.deliverDue()
	defer gs.deliverDue()
	gs.mu.Lock()
	gs.closed = true
	cur, pend := gs.current, gs.pending
	gs.current, gs.pending = nil, nil
	gs.mu.Unlock()
	for _, c := range []*child{pend, cur} {
		if c != nil && c.bal != nil {
			c.bal.Close()
		}
	}
}

// UpdateState is a child's report. The current child's goes to the channel
// unless a pending child is ready to take over; the pending child's is kept
// until it may take over (L9, Swapping out balancer: the new balancer's
// first signal that it is ok to pick). A closed child's is dropped.
func (c *child) UpdateState(s balancer.State) {
	gs := c.gs
	gs.mu.Lock()
	if gs.closed || (c != gs.current && c != gs.pending) {
		gs.mu.Unlock()
		return
	}
	if s.Picker != nil {
		s.Picker = picker{s.Picker}
	}
	c.state, c.reported = s, true
	var forward balancer.State
	var old *child
	switch {
	case c == gs.pending && (s.ConnectivityState != connectivity.Connecting || gs.current.state.ConnectivityState != connectivity.Ready):
		old = gs.swapLocked()
		forward = s
	case c == gs.pending:
		gs.mu.Unlock()
		return
	case gs.pending != nil && gs.pending.reported && s.ConnectivityState != connectivity.Ready:
		old = gs.swapLocked()
		forward = gs.current.state
	default:
		forward = s
	}
	gs.mu.Unlock()
	gs.cc.UpdateState(forward)
	if old != nil {
		old.bal.Close()
	}
}

// swapLocked makes the pending child current and returns the old one.
func (gs *Balancer) swapLocked() *child {
	old := gs.current
	gs.current, gs.pending = gs.pending, nil
	return old
}

// ResolveNow from a closed child is dropped; others go to the channel.
func (c *child) ResolveNow(o resolver.ResolveNowOptions) {
	gs := c.gs
	gs.mu.Lock()
	live := !gs.closed && (c == gs.current || c == gs.pending)
	gs.mu.Unlock()
	if live {
		gs.cc.ResolveNow(o)
	}
}

// Current is the current child's balancer (nil before the first SwitchTo):
// the one whose pickers the channel uses.
func (gs *Balancer) Current() balancer.Balancer {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.current == nil {
		return nil
	}
	return gs.current.bal
}
