package sim

import (
	"github.com/conformlab/conform/reference/gracefulswitch"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"

	"github.com/conformlab/conform/harness/trace"
)

// The channel's idle timeout (Options.IdleTimeout), as grpc-go's channel
// keeps it: after that long without RPC activity (no RPC in flight, none
// started or finished) the channel goes IDLE: it closes its balancer and
// tears down every subchannel left. The next RPC leaves IDLE: a new
// balancer gets the last resolver state and config, and the RPC waits for
// its picker. A62 (Use sticky-TF by default) ends sticky TRANSIENT_FAILURE
// this way.
//
// With an idle timeout the Channel records the channel's states too, as
// channel-state events (source driver), as a lab run's watcher of the
// channel does: the balancer's reports, and the IDLE no balancer reports.

// armIdleLocked starts the idle timer for d. w.mu is held.
func (w *Channel) armIdleLocked(d time.Duration) {
	w.afterLocked("idle timeout", d, w.idleTimerFiredLocked)
}

// idleTimerFiredLocked goes IDLE when the channel has had no RPC activity
// for the idle timeout, else waits again. w.mu is held.
func (w *Channel) idleTimerFiredLocked() {
	timeout := w.opts.IdleTimeout
	if w.active > 0 {
		w.armIdleLocked(timeout)
		return
	}
	if since := w.Now() - w.lastActive; since < timeout {
		w.armIdleLocked(timeout - since)
		return
	}
	w.idle = true
	w.state, w.picker = connectivity.Idle, nil
	w.pickerGen++
	w.channelStateLocked(connectivity.Idle)
	bal := w.bal
	w.ser.enqueue(func() {
		bal.Close()
		w.mu.Lock()
		left := make([]*subConn, 0, len(w.subConns))
		for _, sc := range w.subConns {
			if !sc.shutdown {
				left = append(left, sc)
			}
		}
		w.mu.Unlock()
		for _, sc := range left { // the channel tears down what the balancer left
			sc.Shutdown()
		}
	})
}

// activeLocked counts an RPC's start (+1) or end (-1) as activity, and
// leaves IDLE at an RPC's start. w.mu is held.
func (w *Channel) activeLocked(n int) {
	if w.opts.IdleTimeout <= 0 {
		return
	}
	w.active += n
	w.lastActive = w.Now()
	if n > 0 && w.idle {
		w.exitIdleLocked()
	}
}

// exitIdleLocked builds a new balancer and gives it the last resolver
// state and config, as grpc-go's channel does when an RPC comes while it is
// IDLE. w.mu is held.
func (w *Channel) exitIdleLocked() {
	w.idle = false
	w.armIdleLocked(w.opts.IdleTimeout)
	s, cfg := w.rstate, w.cfg
	w.ser.enqueue(func() {
		gs := gracefulswitch.New(w.cc, balancer.BuildOptions{})
		gs.SwitchTo(balancer.Get(w.builder))
		w.bal = gs
		_ = w.bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: s, BalancerConfig: cfg})
	})
}

// channelStateLocked records the channel's state, when the Channel has an
// idle timeout and the state changed. w.mu is held.
func (w *Channel) channelStateLocked(s connectivity.State) {
	if w.opts.IdleTimeout <= 0 || (w.channelStated && s == w.channelState) {
		return
	}
	w.channelState, w.channelStated = s, true
	w.recordLocked(trace.Event{Source: trace.SourceDriver, Kind: trace.KindChannelState, State: s.String()})
}

// idleLocked reports whether the channel is IDLE after its idle timeout:
// stimuli for the balancer are kept for the next one, or dropped (a
// resolver error, an exit-idle request: the next balancer starts afresh).
// w.mu is held.
func (w *Channel) idleLocked() bool { return w.idle }

// isIdle is idleLocked for callers without w.mu.
func (w *Channel) isIdle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.idle
}
