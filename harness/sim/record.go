package sim

import (
	"strings"
	"time"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/trace"
)

// worldTimer prefixes the purpose of the Channel's own timers (network, backoff,
// RPC deadlines), which are not the policy's and are not recorded.
const worldTimer = "sim/"

// recordLocked appends e, stamped with the current time. w.mu is held.
func (w *Channel) recordLocked(e trace.Event) {
	e.T = w.Now()
	if e.Source == "" {
		e.Source = trace.SourcePolicy
	}
	w.events = append(w.events, e)
	if w.virt == nil { // only wall-mode waits watch for events
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

func (w *Channel) record(e trace.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recordLocked(e)
}

// The clock.Observer of the Channel's clock: the policy's timers become
// timer-start, timer-fire and timer-stop events.

func (w *Channel) timerStarted(id uint64, purpose string, d time.Duration) {
	if !strings.HasPrefix(purpose, worldTimer) {
		w.record(trace.Event{Kind: trace.KindTimerStart, Timer: purpose, TimerID: id, Duration: d})
	}
}

func (w *Channel) timerFired(id uint64, purpose string) {
	if !strings.HasPrefix(purpose, worldTimer) {
		w.record(trace.Event{Kind: trace.KindTimerFire, Timer: purpose, TimerID: id})
	}
}

func (w *Channel) timerStopped(id uint64, purpose string) {
	if !strings.HasPrefix(purpose, worldTimer) {
		w.record(trace.Event{Kind: trace.KindTimerStop, Timer: purpose, TimerID: id})
	}
}

// simTimer is one of the Channel's own timers. Its callback runs with w.mu
// held, so it only changes the Channel's state and queues calls into the
// balancer.
type simTimer struct {
	t clock.Timer
}

// afterLocked starts a Channel timer. w.mu is held.
func (w *Channel) afterLocked(purpose string, d time.Duration, f func()) *simTimer {
	st := &simTimer{}
	if w.closed {
		return st
	}
	st.t = w.clk.AfterFunc(worldTimer+purpose, d, func() {
		w.mu.Lock()
		if _, live := w.timers[st]; !live {
			w.mu.Unlock() // stopped, or the Channel closed, while it fired
			return
		}
		delete(w.timers, st)
		f()
		w.mu.Unlock()
	})
	w.timers[st] = struct{}{}
	return st
}

// stopLocked stops a Channel timer; nil is allowed. w.mu is held.
func (st *simTimer) stopLocked(w *Channel) {
	if st == nil {
		return
	}
	if _, live := w.timers[st]; live {
		delete(w.timers, st)
		st.t.Stop()
	}
}
