// Package clock is the seam through which reference policies read time and
// randomness. It is a leaf package: policies import it and nothing else of
// the harness, so the same policy code runs on wall time in a real grpc-go
// channel (the lab) and on virtual time in the simulator.
//
// A policy obtains its clock from the balancer.ClientConn it was built with:
//
//	clk := clock.From(cc)
//
// The simulator's ClientConn implements Provider and hands out a Virtual
// clock; a real grpc-go channel does not, and From returns Wall. A parent
// policy that wraps the ClientConn for its children must forward Provider so
// that the whole tree shares one clock (see Forward).
package clock

import (
	"time"
)

// Clock is the only source of time and randomness for policy code.
type Clock interface {
	// Now is the current time on this clock.
	Now() time.Time
	// AfterFunc runs f once d has elapsed, on its own goroutine for Wall and
	// from inside Advance for Virtual. purpose names the timer in the gRFCs'
	// words ("connection attempt delay", "failover", "deactivation") so that
	// traces can say which timer started, fired or was stopped.
	AfterFunc(purpose string, d time.Duration, f func()) Timer
	// Rand is the randomness seam: shuffles (A62 shuffleAddressList) and
	// jitter (connection backoff) read it and nothing else.
	Rand() Rand
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing. It reports whether the call
	// stopped it (false: it had already fired or been stopped).
	Stop() bool
}

// Rand is the subset of math/rand used by policies. Implementations are safe
// for concurrent use.
type Rand interface {
	// Float64 returns a number in [0.0, 1.0).
	Float64() float64
	// Intn returns a number in [0, n); n must be positive.
	Intn(n int) int
	// Shuffle permutes n elements with swap (Fisher–Yates).
	Shuffle(n int, swap func(i, j int))
}

// Provider is implemented by a balancer.ClientConn that carries a clock.
type Provider interface {
	Clock() Clock
}

// Aware is implemented by balancer builders whose policies read time only
// through this package. The simulator runs Aware builders on virtual time and
// all others (grpc-go's own policies, say) on wall time.
type Aware interface {
	OnClockSeam()
}

// From returns the clock carried by v (a balancer.ClientConn, typically) or
// the process-wide Wall clock when v carries none.
func From(v any) Clock {
	if p, ok := v.(Provider); ok {
		if c := p.Clock(); c != nil {
			return c
		}
	}
	return wall
}

// Observer sees every timer a clock starts, fires or stops. Observers are
// how the simulator and the recorder turn timers into trace events.
type Observer interface {
	TimerStarted(id uint64, purpose string, d time.Duration)
	TimerFired(id uint64, purpose string)
	TimerStopped(id uint64, purpose string)
}

// ObserverFuncs is an Observer built from functions; unset ones do nothing.
type ObserverFuncs struct {
	Started func(id uint64, purpose string, d time.Duration)
	Fired   func(id uint64, purpose string)
	Stopped func(id uint64, purpose string)
}

var _ Observer = ObserverFuncs{}

// TimerStarted calls Started if it is set.
func (o ObserverFuncs) TimerStarted(id uint64, purpose string, d time.Duration) {
	if o.Started != nil {
		o.Started(id, purpose, d)
	}
}

// TimerFired calls Fired if it is set.
func (o ObserverFuncs) TimerFired(id uint64, purpose string) {
	if o.Fired != nil {
		o.Fired(id, purpose)
	}
}

// TimerStopped calls Stopped if it is set.
func (o ObserverFuncs) TimerStopped(id uint64, purpose string) {
	if o.Stopped != nil {
		o.Stopped(id, purpose)
	}
}
