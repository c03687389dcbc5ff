package weightedtarget

import (
	"sync"
	"time"

	"github.com/conformlab/conform/harness/clock"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
)

// A28, Weighted target LB policy: "When a child policy is removed, it will
// be cached for 15 minutes."
const (
	cacheTimeout = 15 * time.Minute
	purposeCache = "removed child cache"
)

// child is one target's policy. Apart from reports (see mu), its fields
// belong to the weighted_target policy's serializer.
type child struct {
	b     *wtBalancer
	name  string
	tgt   *target
	bal   balancer.Balancer
	state balancer.State // last reported; CONNECTING with a queueing picker at first
	cache clock.Timer    // pending while the child is removed but cached

	// mu guards reports and closed; it is a leaf lock.
	mu      sync.Mutex
	reports []balancer.State
	closed  bool
}

func (b *wtBalancer) newChild(name string, t *target) *child {
	c := &child{b: b, name: name, tgt: t,
		state: balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker{}}}
	c.bal = balancer.Get(t.policy).Build(&childCC{ClientConn: b.cc, c: c}, b.opts)
	return c
}

func (c *child) report(s balancer.State) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.reports = append(c.reports, s)
	c.mu.Unlock()
	c.b.queueReaction()
}

// absorb takes in the child's pending reports; it reports whether there
// were any. Only the latest matters to the aggregate.
func (c *child) absorb() bool {
	c.mu.Lock()
	rs := c.reports
	c.reports = nil
	c.mu.Unlock()
	if len(rs) == 0 {
		return false
	}
	c.state = rs[len(rs)-1]
	return true
}

func (c *child) cached() bool { return c.cache != nil }

// startCache keeps a removed child for cacheTimeout, then closes it.
func (c *child) startCache() {
	if c.cache != nil {
		return
	}
	var t clock.Timer
	t = c.b.clk.AfterFunc(purposeCache, cacheTimeout, func() {
		c.b.ser.Run(func() {
			if c.cache != t || c.b.closed {
				return
			}
			c.cache = nil
			c.b.removeChild(c)
		})
	})
	c.cache = t
}

func (c *child) stopCache() {
	if c.cache != nil {
		c.cache.Stop()
		c.cache = nil
	}
}

func (c *child) close() {
	c.mu.Lock()
	c.closed = true
	c.reports = nil
	c.mu.Unlock()
	c.stopCache()
	c.bal.Close()
}

// childCC is the ClientConn a target's policy sees: the channel's, with its
// state reports routed to the weighted_target policy and the clock forwarded
// so that the whole tree shares one clock.
type childCC struct {
	balancer.ClientConn
	c *child
}

var _ clock.Provider = (*childCC)(nil)

func (w *childCC) UpdateState(s balancer.State) { w.c.report(s) }

// Clock forwards the channel's clock (clock.Provider).
func (w *childCC) Clock() clock.Clock { return clock.From(w.ClientConn) }
