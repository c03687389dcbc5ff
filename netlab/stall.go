package netlab

import (
	"time"
)

// The stall watch: while a lab is open (Config.WatchStalls), a goroutine of
// this process sleeps in steps of StallStep on a Go timer and measures how
// late each wake-up is. A wake-up StallThreshold late or more is an
// interval in which the machine did not run promptly what was ready to
// run: a stall, recorded as an EventStall (T: when the goroutine should
// have woken; Late: how much later it did). It is the lab's evidence that a
// client's timer expiring then may have been observed late, for whatever
// reason (other processes on the cores, this process's own runtime): a
// check that judges a timer's value refuses to judge rather than fail or
// pass on a wrong figure (suites/spec, RequireSteadyMachine).
//
// Why a goroutine on a Go timer, not an OS thread of its own sleeping in
// clock_nanosleep: a locked thread blocked in a system call keeps one of
// the runtime's Ps (two on a 2-core machine) for nearly all of every step,
// and the scheduler favours a thread that mostly sleeps over the busier
// ones that run a client's timers, so it saw less than they suffered (in
// the runner's jitter benchmark it missed a 40 ms late Connection Attempt
// Delay, its longest stall 8.5 ms). A goroutine wakes as a timer in this
// process does: through the runtime's timers, on whichever thread gets to
// run them. It sees the machine as the in-process clients see it, and as
// any other process does only as far as the load is shared.
//
// Its cost is a timer and two clock reads per step: about 4 % of one core
// on the 2-core VM it was measured on (BenchmarkStallWatch), where any
// timer wake-up is dear (a C loop of 1 ms clock_nanosleep costs 15 µs a
// wake-up, Go's timer path 40–80 µs), and only while a lab is open.
const (
	// StallStep is how long the watch sleeps between looks at the clock.
	StallStep = 2 * time.Millisecond
	// StallThreshold is the lateness from which a wake-up is a stall.
	StallThreshold = 4 * time.Millisecond
)

// stallWatch is a running watch: a goroutine that reports every wake-up
// until Close.
type stallWatch struct {
	stop chan struct{}
	done chan struct{}
}

// watchStalls starts a watch that reads now (a lab's clock) around each
// sleep of step and calls wake with each wake-up's intended time and its
// lateness, on the watch's goroutine. Close must be called.
func watchStalls(now func() time.Duration, step time.Duration, wake func(at, late time.Duration)) *stallWatch {
	w := &stallWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		before := now()
		t := time.NewTimer(step)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				// A wake-up still to come when the lab closes may be a
				// stall under way (the watch's own timer held up with the
				// client's): it is reported as far as it went.
				if late := now() - before - step; late > 0 {
					wake(before+step, late)
				}
				return
			case <-t.C:
			}
			wake(before+step, now()-before-step)
			before = now()
			t.Reset(step)
		}
	}()
	return w
}

// recordStalls is the lab's wake function: a wake-up StallThreshold late or
// more is an EventStall.
func recordStalls(rec *recorder) func(at, late time.Duration) {
	return func(at, late time.Duration) {
		if late >= StallThreshold {
			rec.add(Event{T: at, Kind: EventStall, Late: late})
		}
	}
}

// Close stops the watch and returns when its goroutine has ended.
func (w *stallWatch) Close() {
	close(w.stop)
	<-w.done
}
