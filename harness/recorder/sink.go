package recorder

import (
	"context"
	"sync"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Sink receives the recorder's events, in time order, one call at a time.
// Record is called on the channel's own goroutines, inside the balancer's
// callbacks and the picker: it must be cheap and must never block.
type Sink interface {
	Record(e trace.Event)
}

// SinkFunc is a Sink made of a function.
type SinkFunc func(trace.Event)

// Record calls f(e).
func (f SinkFunc) Record(e trace.Event) { f(e) }

// Timebase is implemented by a Sink that wants the events on its own
// timebase (a lab's, say): the recorder stamps T with Now instead of the time
// since it started.
type Timebase interface {
	Now() time.Duration
}

// discard is the sink of a recorder whose sink is not registered.
type discard struct{}

func (discard) Record(trace.Event) {}

var (
	sinksMu sync.RWMutex
	sinks   = map[string]Sink{}
)

// RegisterSink makes s the sink of every recorder built afterwards from a
// config naming sink name (the "sink" field; "" is the default sink). The
// caller controls the registry: unregister removes s, if it is still the
// sink registered under name. Recorders already built keep their sink.
func RegisterSink(name string, s Sink) (unregister func()) {
	sinksMu.Lock()
	defer sinksMu.Unlock()
	sinks[name] = s
	return func() {
		sinksMu.Lock()
		defer sinksMu.Unlock()
		if sinks[name] == s {
			delete(sinks, name)
		}
	}
}

// lookupSink returns the sink registered under name, or one that discards.
func lookupSink(name string) Sink {
	sinksMu.RLock()
	defer sinksMu.RUnlock()
	if s, ok := sinks[name]; ok {
		return s
	}
	return discard{}
}

// Buffer is a Sink that keeps events in memory: all of them, or with a limit
// only the most recent ones (a ring), so that a production client can keep
// recording at a bounded cost. It is safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex
	limit   int
	events  []trace.Event
	head    int // with a limit and a full ring: index of the oldest event
	dropped uint64
	changed chan struct{} // closed by the next Record; nil when nobody waits
}

var _ Sink = (*Buffer)(nil)

// NewBuffer returns a Buffer keeping at most limit events (the most recent);
// limit <= 0 keeps every event.
func NewBuffer(limit int) *Buffer {
	return &Buffer{limit: max(limit, 0)}
}

// Record stores e, evicting the oldest event when the buffer is full.
func (b *Buffer) Record(e trace.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.limit == 0 || len(b.events) < b.limit:
		b.events = append(b.events, e)
	default:
		b.events[b.head] = e
		b.head = (b.head + 1) % b.limit
		b.dropped++
	}
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// Events returns a copy of the stored events, oldest first.
func (b *Buffer) Events() []trace.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eventsLocked()
}

func (b *Buffer) eventsLocked() []trace.Event {
	out := make([]trace.Event, 0, len(b.events))
	out = append(out, b.events[b.head:]...)
	return append(out, b.events[:b.head]...)
}

// Dropped is the number of events evicted to respect the limit.
func (b *Buffer) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Wait blocks until cond holds for the stored events (checked now and after
// every Record) or ctx is done, and returns the events cond accepted.
// cond must not call the Buffer.
func (b *Buffer) Wait(ctx context.Context, cond func([]trace.Event) bool) ([]trace.Event, error) {
	for {
		b.mu.Lock()
		evs := b.eventsLocked()
		if cond(evs) {
			b.mu.Unlock()
			return evs, nil
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return evs, ctx.Err()
		}
	}
}
