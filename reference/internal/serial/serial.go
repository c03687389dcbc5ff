// Package serial is the call serializer every conform reference policy runs
// its work on.
//
// The channel already serializes its own calls into a policy; a Queue exists
// for what it does not cover, and for re-entrancy:
//   - timers (Connection Attempt Delay, A56's failover and deactivation
//     timers, A28's child cache), which fire on their own goroutines on the
//     wall clock;
//   - pickers, which ask to leave IDLE from an RPC's goroutine;
//   - a ClientConn (the simulator's, a parent policy's) or a child policy
//     that calls back into the policy from inside a call the policy made
//     (Connect reporting CONNECTING synchronously, a child reporting its
//     state from UpdateClientConnState, say).
//
// Such a call is queued and runs as soon as the current function returns,
// on the same goroutine, so the simulation stays deterministic, a parent's
// update reaches the channel as one aggregate, and nothing deadlocks.
//
// The package imports nothing but sync, so that the leaf policy
// (pick_first) shares it without importing any of its parents' helpers.
package serial

import "sync"

// Queue runs functions one at a time, in the order they were submitted,
// without holding a lock while a function runs. The zero value is ready to
// use; a Queue must not be copied after first use.
type Queue struct {
	mu      sync.Mutex
	queue   []func()
	running bool
}

// Run runs f after every function submitted before it: on this goroutine
// when no other goroutine is draining the queue, else on the goroutine that
// is. Run returns once f has run or has been handed to the goroutine already
// draining the queue; so a call from inside a running function (re-entrant)
// returns at once, and f runs when the current function has returned.
func (q *Queue) Run(f func()) {
	q.mu.Lock()
	q.queue = append(q.queue, f)
	if q.running {
		q.mu.Unlock()
		return
	}
	q.running = true
	for len(q.queue) > 0 {
		next := q.queue[0]
		q.queue[0] = nil
		q.queue = q.queue[1:]
		q.mu.Unlock()
		next()
		q.mu.Lock()
	}
	q.running = false
	q.mu.Unlock()
}
