package recorder

import (
	"sync/atomic"
	"time"

	"github.com/conformlab/conform/harness/clock"
)

// observedClock is a clock the recorder does not own (the channel's) with
// its timers reported to obs; ids are the recorder's own, from 1.
type observedClock struct {
	clock.Clock
	obs    clock.Observer
	nextID atomic.Uint64
}

func (c *observedClock) AfterFunc(purpose string, d time.Duration, f func()) clock.Timer {
	t := &observedTimer{id: c.nextID.Add(1), purpose: purpose, obs: c.obs}
	c.obs.TimerStarted(t.id, purpose, d)
	t.t = c.Clock.AfterFunc(purpose, d, func() {
		c.obs.TimerFired(t.id, purpose)
		f()
	})
	return t
}

type observedTimer struct {
	t       clock.Timer
	id      uint64
	purpose string
	obs     clock.Observer
}

func (t *observedTimer) Stop() bool {
	stopped := t.t.Stop()
	if stopped {
		t.obs.TimerStopped(t.id, t.purpose)
	}
	return stopped
}
