package clock

import (
	"container/heap"
	"sync"
	"time"
)

// Epoch is the instant a Virtual clock starts at. It is fixed so that traces
// recorded in simulation are byte-for-byte repeatable.
var Epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Virtual is a clock whose time moves only when Advance (or Step) is called.
// Due timers run in deadline order; timers with the same deadline run in the
// order they were started. Callbacks run on the goroutine that called
// Advance, one at a time, with Now equal to their deadline: this is what
// makes a simulation deterministic.
type Virtual struct {
	rnd Rand
	obs Observer

	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers timerHeap
}

var _ Clock = (*Virtual)(nil)

// NewVirtual returns a virtual clock at Epoch, its randomness seeded with
// seed, reporting timers to obs (which may be nil).
func NewVirtual(seed uint64, obs Observer) *Virtual {
	return &Virtual{rnd: NewRand(seed), obs: obs, now: Epoch}
}

// Now returns the virtual time.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// Elapsed returns the virtual time since Epoch.
func (v *Virtual) Elapsed() time.Duration { return v.Now().Sub(Epoch) }

// Rand returns the clock's seeded randomness.
func (v *Virtual) Rand() Rand { return v.rnd }

// AfterFunc schedules f at Now()+d. A negative d counts as zero.
func (v *Virtual) AfterFunc(purpose string, d time.Duration, f func()) Timer {
	if d < 0 {
		d = 0
	}
	v.mu.Lock()
	v.seq++
	t := &virtualTimer{v: v, id: v.seq, purpose: purpose, when: v.now.Add(d), f: f, index: -1}
	heap.Push(&v.timers, t)
	v.mu.Unlock()
	if v.obs != nil {
		v.obs.TimerStarted(t.id, purpose, d)
	}
	return t
}

// Pending is the number of timers that have neither fired nor been stopped.
func (v *Virtual) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.timers)
}

// NextDeadline returns the deadline of the earliest pending timer.
func (v *Virtual) NextDeadline() (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.timers) == 0 {
		return time.Time{}, false
	}
	return v.timers[0].when, true
}

// Step runs the earliest pending timer if it is due at or before limit,
// moving Now to its deadline. It reports whether a timer ran.
func (v *Virtual) Step(limit time.Time) bool {
	v.mu.Lock()
	if len(v.timers) == 0 || v.timers[0].when.After(limit) {
		v.mu.Unlock()
		return false
	}
	t := heap.Pop(&v.timers).(*virtualTimer)
	if t.when.After(v.now) {
		v.now = t.when
	}
	v.mu.Unlock()
	if v.obs != nil {
		v.obs.TimerFired(t.id, t.purpose)
	}
	t.f()
	return true
}

// AdvanceTo runs, in order, every timer due at or before target (including
// timers that those timers start), then sets Now to target. Moving backwards
// is a no-op.
func (v *Virtual) AdvanceTo(target time.Time) {
	for v.Step(target) {
	}
	v.mu.Lock()
	if target.After(v.now) {
		v.now = target
	}
	v.mu.Unlock()
}

// Advance is AdvanceTo(Now()+d).
func (v *Virtual) Advance(d time.Duration) { v.AdvanceTo(v.Now().Add(d)) }

type virtualTimer struct {
	v       *Virtual
	id      uint64
	purpose string
	when    time.Time
	f       func()
	index   int // in the heap; -1 once fired or stopped
}

func (t *virtualTimer) Stop() bool {
	t.v.mu.Lock()
	if t.index < 0 {
		t.v.mu.Unlock()
		return false
	}
	heap.Remove(&t.v.timers, t.index)
	t.v.mu.Unlock()
	if t.v.obs != nil {
		t.v.obs.TimerStopped(t.id, t.purpose)
	}
	return true
}

// timerHeap orders timers by deadline, then by start order (id).
type timerHeap []*virtualTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*virtualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
