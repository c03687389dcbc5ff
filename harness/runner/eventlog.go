package runner

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// eventLog is a wall-time run's events (a lab run's, the runner's or a
// driver's) in arrival order, append-only as the timeline's incremental
// watches need, on the scenario's timebase. It gives a lab run its now, events
// and Advance. Its methods may be called from any goroutine.
type eventLog struct {
	clock func() time.Duration // the run's clock (the lab's), from any zero

	mu      sync.Mutex
	base    time.Duration // the clock's time at which the scenario started
	evs     []trace.Event // arrival order
	changed chan struct{} // closed and replaced on every Add
}

// newEventLog returns an empty log on clock's timebase (a lab's Now); the
// scenario's time is clock's until Start.
func newEventLog(clock func() time.Duration) *eventLog {
	return &eventLog{clock: clock, changed: make(chan struct{})}
}

// Start makes the clock's current time the scenario's time zero. Events
// recorded before (setting up the channel, the driver starting) are stamped
// zero.
func (l *eventLog) Start() {
	base := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.base = base
	evs := l.evs[:0]
	for _, e := range l.evs {
		if e, ok := rebase(e, base); ok {
			evs = append(evs, e)
		}
	}
	l.evs = evs
}

// rebase puts e, stamped on the clock's timebase, on the scenario's, which
// starts at base: an event before base is stamped zero, except a stall,
// which is kept only for its part after base (one that ended before the
// scenario started says nothing of it).
func rebase(e trace.Event, base time.Duration) (trace.Event, bool) {
	if e.Kind == trace.KindStall && e.T < base {
		end := e.T + e.Duration
		if end <= base {
			return e, false
		}
		e.T, e.Duration = base, end-base
	}
	e.T = max(0, e.T-base)
	return e, true
}

// Add records e, stamped on the clock's timebase, on the scenario's.
func (l *eventLog) Add(e trace.Event) {
	l.mu.Lock()
	e, ok := rebase(e, l.base)
	if !ok {
		l.mu.Unlock()
		return
	}
	l.evs = append(l.evs, e)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// Now is the time since the scenario started.
func (l *eventLog) Now() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.clock() - l.base
}

// Events are the events so far, in arrival order.
func (l *eventLog) Events() []trace.Event {
	evs, _ := l.snapshot()
	return evs
}

// Sorted are the events so far in time order (arrival order among equal
// times).
func (l *eventLog) Sorted() []trace.Event {
	evs, _ := l.snapshot()
	slices.SortStableFunc(evs, func(a, b trace.Event) int { return int(a.T - b.T) })
	return evs
}

// Advance waits, on wall time, until cond holds or Now reaches until: it
// checks cond again after every Add.
func (l *eventLog) Advance(ctx context.Context, cond func() bool, until time.Duration) error {
	for {
		_, changed := l.snapshot()
		if cond() {
			return nil
		}
		left := until - l.Now()
		if left <= 0 {
			return nil
		}
		timer := time.NewTimer(left)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (l *eventLog) snapshot() ([]trace.Event, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs), l.changed
}
