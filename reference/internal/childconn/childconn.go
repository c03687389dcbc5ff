// Package childconn is what a parent policy (priority, weighted_target)
// puts between each child policy and the channel: the ClientConn the child
// sees, and the record of the states the child reports until the parent's
// serializer takes them in.
package childconn

import (
	"sync"

	"github.com/conformlab/conform/harness/clock"
	"google.golang.org/grpc/balancer"
)

// Reports holds the states a child policy reported that its parent has not
// taken in yet. A child may report from any goroutine (its own timers run
// on wall time in a real channel), so Reports has its own mutex, a leaf
// lock: no other lock is taken while it is held. The zero value is ready to
// use.
type Reports struct {
	mu      sync.Mutex
	pending []balancer.State
	closed  bool
}

// Add records s, unless Close was called; it reports whether s was
// recorded.
func (r *Reports) Add(s balancer.State) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.pending = append(r.pending, s)
	return true
}

// Take returns the states recorded since the last call, oldest first, and
// forgets them.
func (r *Reports) Take() []balancer.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.pending
	r.pending = nil
	return rs
}

// Close drops the pending states; states added afterwards are dropped too.
func (r *Reports) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.pending = nil
}

// Closed reports whether Close was called.
func (r *Reports) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// ClientConn is the ClientConn a child policy sees: the parent's (the
// channel's), with the child's state reports handed to OnState and the
// clock forwarded, so that the whole tree shares one clock. A parent that
// changes more (priority drops re-resolution requests) embeds it.
type ClientConn struct {
	balancer.ClientConn
	// OnState receives every state the child reports, on the child's
	// goroutine.
	OnState func(balancer.State)
}

var _ clock.Provider = (*ClientConn)(nil)

// UpdateState hands s to OnState.
func (w *ClientConn) UpdateState(s balancer.State) { w.OnState(s) }

// Clock forwards the parent's clock (clock.Provider).
func (w *ClientConn) Clock() clock.Clock { return clock.From(w.ClientConn) }
