package priority

import (
	"sync/atomic"
	"time"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/gracefulswitch"
	"github.com/conformlab/conform/reference/internal/childconn"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

// The two timers of A56, Child Lifetime Management and Child Connectivity
// State Tracking. Their purposes name them in traces.
const (
	failoverTimeout     = 10 * time.Second
	deactivationTimeout = 15 * time.Minute

	purposeFailover     = "failover"
	purposeDeactivation = "deactivation"
)

// child is one child policy of the priority policy. Apart from reports (see
// reports), its fields belong to the priority policy's serializer.
type child struct {
	b    *priorityBalancer
	name string
	cfg  *childConfig
	bal  balancer.Balancer
	gs   *gracefulswitch.Balancer // bal: the child policy, behind a graceful switch
	ccw  *childCC

	// state is the most recent state and picker the child reported (A56,
	// Child Connectivity State Tracking: saved because it may be reused at
	// any time). A new child starts in CONNECTING with a queueing picker.
	state balancer.State
	// readyOrIdleSinceTF is true when the child reported READY or IDLE more
	// recently than TRANSIENT_FAILURE: the condition for restarting the
	// failover timer on CONNECTING.
	readyOrIdleSinceTF bool
	failover           clock.Timer // pending failover timer, or nil
	deactivation       clock.Timer // pending deactivation timer, or nil (active)

	// reports are the child's reports not yet taken in; the child may
	// report from any goroutine.
	reports childconn.Reports
}

// newChild builds a child from the grpc-go registry behind its own
// ClientConn wrapper, starts its failover timer (A56: started when the child
// is first created) and sends it its config and addresses.
func (b *priorityBalancer) newChild(name string, cfg *childConfig) *child {
	c := &child{
		b:     b,
		name:  name,
		cfg:   cfg,
		state: balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker{}},
	}
	c.ccw = &childCC{ClientConn: childconn.ClientConn{ClientConn: b.cc, OnState: c.report}, c: c}
	c.ccw.ignore.Store(cfg.ignoreReresolution)
	c.startFailoverTimer()
	c.gs = gracefulswitch.New(c.ccw, b.opts)
	c.bal = c.gs
	c.gs.SwitchTo(balancer.Get(cfg.policy))
	c.update(cfg)
	return c
}

// switchPolicy gives the child a config naming another policy: the new
// policy is built beside the old one, which keeps serving the child's picks
// until the new one may be picked from (L9, Swapping out balancer), as a
// channel changes its policy; the child keeps its name, timers and state.
func (c *child) switchPolicy(cfg *childConfig) {
	c.gs.SwitchTo(balancer.Get(cfg.policy))
	c.update(cfg)
}

// update sends the child its config and its share of the addresses (A56,
// Hierarchical Addresses), then takes in whatever it reported meanwhile.
func (c *child) update(cfg *childConfig) {
	c.cfg = cfg
	c.ccw.ignore.Store(cfg.ignoreReresolution)
	s := c.b.childResolverState(c.name)
	_ = c.bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: s, BalancerConfig: cfg.config})
	c.absorb()
}

// report queues a state reported by the child; the serializer takes it in.
func (c *child) report(s balancer.State) {
	if c.reports.Add(s) {
		c.b.queueReaction()
	}
}

// absorb applies, in order, the states the child reported since the last
// call, and reports whether there were any. When it returns, c.state is the
// child's latest report and its failover timer agrees with every report.
func (c *child) absorb() bool {
	rs := c.reports.Take()
	for _, s := range rs {
		c.apply(s)
	}
	return len(rs) > 0
}

// apply takes in one reported state (A56, Child Connectivity State
// Tracking): READY, IDLE and TRANSIENT_FAILURE cancel the failover timer;
// CONNECTING may start it, as the revision says.
func (c *child) apply(s balancer.State) {
	old := c.state.ConnectivityState
	c.state = s
	switch s.ConnectivityState {
	case connectivity.Ready, connectivity.Idle:
		c.stopFailoverTimer()
		c.readyOrIdleSinceTF = true
	case connectivity.TransientFailure:
		c.stopFailoverTimer()
		c.readyOrIdleSinceTF = false
	case connectivity.Connecting:
		if c.connectingStartsFailoverTimer(old) {
			c.stopFailoverTimer()
			c.startFailoverTimer()
		}
	}
}

// ---------------------------------------------------------------------------
// Where the revisions of A56 differ (Child Connectivity State Tracking).
//
// seed (2022-08-23):
//   - "It will also be started if the child reports CONNECTING and it has
//     previously reported READY or IDLE more recently than
//     TRANSIENT_FAILURE": every such CONNECTING report (re)starts the timer,
//     a repeated CONNECTING included; a pending timer starts over.
//   - When the timer fires, the child is treated as if it had reported
//     TRANSIENT_FAILURE: its saved state becomes TRANSIENT_FAILURE (its last
//     picker is kept, having no other) and the choice runs as for a report.
//
// latest (2025-08-18, with A115):
//   - The timer starts only when the child transitions to CONNECTING from
//     another state (a duplicate CONNECTING is ignored), under the same
//     READY-or-IDLE-since-TRANSIENT_FAILURE condition.
//   - When the timer fires, the choice is re-run; the child's saved state is
//     left as it is (CONNECTING).
//
// The third difference, A115's removal of a child dropped from the config
// without the deactivation cache, is in priorityBalancer.applyConfig.
// ---------------------------------------------------------------------------

// connectingStartsFailoverTimer says whether a CONNECTING report, arriving
// when the child's saved state was old, starts the failover timer.
func (c *child) connectingStartsFailoverTimer(old connectivity.State) bool {
	if !c.readyOrIdleSinceTF {
		return false
	}
	if c.b.cfg.revision == revisionLatest {
		return old != connectivity.Connecting
	}
	return true
}

// failoverTimerFired is the failover timer's expiry, run by the serializer.
func (c *child) failoverTimerFired() {
	if c.b.cfg.revision == revisionSeed {
		c.state.ConnectivityState = connectivity.TransientFailure
		c.readyOrIdleSinceTF = false
	}
	c.b.choosePriority()
}

// ---------------------------------------------------------------------------

func (c *child) startFailoverTimer() {
	var t clock.Timer
	t = c.b.clk.AfterFunc(purposeFailover, failoverTimeout, func() {
		c.b.ser.Run(func() {
			// A timer stopped after its callback was queued is stale.
			if c.failover != t || c.isClosed() {
				return
			}
			c.failover = nil
			c.failoverTimerFired()
		})
	})
	c.failover = t
}

func (c *child) stopFailoverTimer() {
	if c.failover != nil {
		c.failover.Stop()
		c.failover = nil
	}
}

// failoverTimerPending is A56's FailoverTimerPending.
func (c *child) failoverTimerPending() bool { return c.failover != nil }

// deactivate starts the 15-minute deactivation timer unless it is already
// running (A56, Child Lifetime Management); the child is destroyed when it
// fires.
func (c *child) deactivate() {
	if c.deactivation != nil {
		return
	}
	var t clock.Timer
	t = c.b.clk.AfterFunc(purposeDeactivation, deactivationTimeout, func() {
		c.b.ser.Run(func() {
			if c.deactivation != t || c.isClosed() {
				return
			}
			c.deactivation = nil
			c.b.removeChild(c)
		})
	})
	c.deactivation = t
}

// maybeReactivate cancels a pending deactivation timer (A56, Child Lifetime
// Management: reactivation).
func (c *child) maybeReactivate() {
	if c.deactivation != nil {
		c.deactivation.Stop()
		c.deactivation = nil
	}
}

// close stops the child's timers and closes its policy. Reports arriving
// afterwards are dropped.
func (c *child) close() {
	c.reports.Close()
	c.stopFailoverTimer()
	c.maybeReactivate()
	c.bal.Close()
}

func (c *child) isClosed() bool { return c.reports.Closed() }

// childCC is the ClientConn a child policy sees: the channel's, with its
// state reports routed to the priority policy and the clock forwarded
// (childconn.ClientConn), and re-resolution requests dropped when the config
// says ignore_reresolution_requests (A56, LB Policy Configuration; A37).
type childCC struct {
	childconn.ClientConn
	c      *child
	ignore atomic.Bool
}

var _ clock.Provider = (*childCC)(nil)

func (w *childCC) ResolveNow(o resolver.ResolveNowOptions) {
	if w.ignore.Load() || w.c.isClosed() {
		return
	}
	w.ClientConn.ResolveNow(o)
}
