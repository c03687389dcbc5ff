package weightedtarget

import (
	"time"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/childconn"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
)

// A28, Weighted target LB policy: "When a child policy is removed, it will
// be cached for 15 minutes."
const (
	cacheTimeout = 15 * time.Minute
	purposeCache = "removed child cache"
)

// child is one target's policy. Apart from reports (see reports), its fields
// belong to the weighted_target policy's serializer.
type child struct {
	b     *wtBalancer
	name  string
	tgt   *target
	bal   balancer.Balancer
	state balancer.State // last reported; CONNECTING with a queueing picker at first
	cache clock.Timer    // pending while the child is removed but cached

	reports childconn.Reports // not yet taken in; added from any goroutine
}

func (b *wtBalancer) newChild(name string, t *target) *child {
	c := &child{b: b, name: name, tgt: t,
		state: balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker{}}}
	c.bal = balancer.Get(t.policy).Build(&childconn.ClientConn{ClientConn: b.cc, OnState: c.report}, b.opts)
	return c
}

// report records a state reported by the child; the serializer takes it in.
func (c *child) report(s balancer.State) {
	if c.reports.Add(s) {
		c.b.queueReaction()
	}
}

// absorb takes in the child's pending reports; it reports whether there
// were any. Only the latest matters to the aggregate.
func (c *child) absorb() bool {
	rs := c.reports.Take()
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
	c.reports.Close()
	c.stopCache()
	c.bal.Close()
}
