package clock

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

var wall Clock = NewWall(rand.Uint64(), nil)

// Wall returns the process-wide wall clock, randomly seeded.
func Wall() Clock { return wall }

// WallClock runs timers on real time (time.AfterFunc). It is what policies
// get in a real grpc-go channel.
type WallClock struct {
	rnd    Rand
	obs    Observer
	nextID atomic.Uint64
}

// NewWall returns a wall clock whose randomness is seeded with seed and whose
// timers are reported to obs (which may be nil).
func NewWall(seed uint64, obs Observer) *WallClock {
	return &WallClock{rnd: NewRand(seed), obs: obs}
}

// Now returns time.Now().
func (w *WallClock) Now() time.Time { return time.Now() }

// Rand returns the clock's randomness.
func (w *WallClock) Rand() Rand { return w.rnd }

// AfterFunc starts a real timer.
func (w *WallClock) AfterFunc(purpose string, d time.Duration, f func()) Timer {
	id := w.nextID.Add(1)
	t := &wallTimer{id: id, purpose: purpose, obs: w.obs}
	if w.obs != nil {
		w.obs.TimerStarted(id, purpose, d)
	}
	t.mu.Lock()
	t.t = time.AfterFunc(d, func() {
		t.mu.Lock() // wait until AfterFunc has stored t.t
		t.mu.Unlock()
		if t.done.CompareAndSwap(false, true) {
			if t.obs != nil {
				t.obs.TimerFired(t.id, t.purpose)
			}
			f()
		}
	})
	t.mu.Unlock()
	return t
}

type wallTimer struct {
	id      uint64
	purpose string
	obs     Observer
	mu      sync.Mutex
	t       *time.Timer
	done    atomic.Bool
}

func (t *wallTimer) Stop() bool {
	if !t.done.CompareAndSwap(false, true) {
		return false
	}
	t.mu.Lock()
	t.t.Stop()
	t.mu.Unlock()
	if t.obs != nil {
		t.obs.TimerStopped(t.id, t.purpose)
	}
	return true
}
