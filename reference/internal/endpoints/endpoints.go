// Package endpoints is the "one child policy per endpoint" machinery of
// petiole policies (A61, Use pick_first as the Universal Leaf Policy):
// round_robin uses it now, and ring_hash, weighted_round_robin and
// least_request can later.
//
// A Balancer keeps one child (normally conform_pick_first) per endpoint of
// the resolver update, identified by the unordered set of its addresses
// (A61, Address List Updates in Petiole Policies, Java/Go): an endpoint
// whose addresses come back in another order keeps its child, which is sent
// the new order. The owner aggregates the children's states in OnChange.
package endpoints

import (
	"errors"
	"slices"
	"strings"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/serial"
)

// Options configures a Balancer.
type Options struct {
	// Child builds the policy for each endpoint.
	Child balancer.Builder
	// ChildConfig is passed to every child as its BalancerConfig (nil: the
	// child's defaults).
	ChildConfig serviceconfig.LoadBalancingConfig
	// PrepareChild, if set, rewrites the resolver state each child receives
	// (for instance pickfirst.EnableHealthReporting).
	PrepareChild func(resolver.State) resolver.State
	// AutoReconnect makes the Balancer call ExitIdle on a child as soon as
	// it reports IDLE (round_robin does; ring_hash connects lazily).
	AutoReconnect bool
	// OnChange is called, serialized with everything else, after the
	// children or their states changed; the owner reports its aggregate
	// state from it. Child states that arrive together are folded into one
	// call.
	OnChange func(View)
}

// View is what OnChange sees.
type View struct {
	// Children in the order of the last resolver update.
	Children []*Child
	// ResolverErr is the last resolver error, cleared by a good update.
	ResolverErr error
}

// Child is one endpoint's child policy as its parent sees it.
type Child struct {
	// Endpoint as last received, addresses in the latest order.
	Endpoint resolver.Endpoint
	// State is what the child last reported; before its first report the
	// state is IDLE with a nil Picker.
	State balancer.State

	b      *Balancer
	bal    balancer.Balancer
	closed bool
}

// ExitIdle asks the child to leave IDLE. It may be called from any
// goroutine, a picker included; the call is serialized with the Balancer.
func (c *Child) ExitIdle() {
	c.b.ser.Run(func() {
		if !c.closed {
			c.bal.ExitIdle()
		}
	})
}

// Balancer implements balancer.Balancer over one child per endpoint.
type Balancer struct {
	cc    balancer.ClientConn
	bopts balancer.BuildOptions
	opts  Options
	clk   clock.Clock
	// ser runs every call and child report, one at a time (serial.Queue):
	// children report from inside calls the Balancer made, and from their
	// own timer goroutines on the wall clock.
	ser serial.Queue

	children    map[string]*Child
	order       []*Child
	resolverErr error
	flushQueued bool
	closed      bool
}

var _ balancer.Balancer = (*Balancer)(nil)

// New returns a Balancer reporting to cc. Its children share cc's clock.
func New(cc balancer.ClientConn, bopts balancer.BuildOptions, opts Options) *Balancer {
	return &Balancer{cc: cc, bopts: bopts, opts: opts, clk: clock.From(cc), children: make(map[string]*Child)}
}

// Clock is the clock the Balancer and its children use.
func (b *Balancer) Clock() clock.Clock { return b.clk }

// key is an endpoint's identity: the unordered set of its addresses.
// Resolver attributes are not part of it (A61 leaves that to the policy).
func key(e resolver.Endpoint) string {
	addrs := make([]string, len(e.Addresses))
	for i, a := range e.Addresses {
		addrs[i] = a.Addr
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	return strings.Join(addrs, ",")
}

// UpdateClientConnState reconciles the children with the endpoints of s:
// new endpoints get a new child, vanished ones have theirs closed, and every
// remaining child receives its endpoint with the addresses in the new order.
// An endpoint listed twice (the same set of addresses) is used once, and one
// without addresses not at all. An update without any address is refused
// with balancer.ErrBadResolverState (its children are closed all the same).
// Children's own errors are not returned: the work may run on the goroutine
// already draining the serializer, after this call has returned.
func (b *Balancer) UpdateClientConnState(s balancer.ClientConnState) error {
	endpoints := s.ResolverState.Endpoints
	if len(endpoints) == 0 {
		for _, a := range s.ResolverState.Addresses {
			endpoints = append(endpoints, resolver.Endpoint{Addresses: []resolver.Address{a}})
		}
	}
	var err error
	if !slices.ContainsFunc(endpoints, func(e resolver.Endpoint) bool { return len(e.Addresses) > 0 }) {
		err = balancer.ErrBadResolverState
	}
	attrs := s.ResolverState.Attributes
	b.ser.Run(func() { b.update(endpoints, attrs) })
	return err
}

func (b *Balancer) update(endpoints []resolver.Endpoint, attrs *attributes.Attributes) {
	if b.closed {
		return
	}
	b.resolverErr = nil
	next := make(map[string]*Child, len(endpoints))
	var order []*Child
	for _, e := range endpoints {
		k := key(e)
		if len(e.Addresses) == 0 || next[k] != nil {
			continue
		}
		c := b.children[k]
		if c == nil {
			c = &Child{b: b}
			c.bal = b.opts.Child.Build(&childCC{ClientConn: b.cc, b: b, c: c}, b.bopts)
		}
		c.Endpoint = e
		next[k] = c
		order = append(order, c)
	}
	for _, c := range b.order { // in order, so that traces are repeatable
		if next[key(c.Endpoint)] != c {
			c.closed = true
			c.bal.Close()
		}
	}
	b.children, b.order = next, order
	for _, c := range order {
		rs := resolver.State{Endpoints: []resolver.Endpoint{c.Endpoint}, Attributes: attrs}
		if b.opts.PrepareChild != nil {
			rs = b.opts.PrepareChild(rs)
		}
		c.bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: rs, BalancerConfig: b.opts.ChildConfig})
	}
	b.changed()
}

// ResolverError is passed to every child; OnChange sees it too.
func (b *Balancer) ResolverError(err error) {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		if err == nil {
			err = errors.New("unknown resolver error")
		}
		b.resolverErr = err
		for _, c := range b.order {
			c.bal.ResolverError(err)
		}
		b.changed()
	})
}

// UpdateSubConnState is not used: children's SubConns have listeners.
func (b *Balancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle asks every child to leave IDLE.
func (b *Balancer) ExitIdle() {
	b.ser.Run(func() {
		for _, c := range b.order {
			if !c.closed {
				c.bal.ExitIdle()
			}
		}
	})
}

// Close closes every child.
func (b *Balancer) Close() {
	b.ser.Run(func() {
		b.closed = true
		for _, c := range b.order {
			c.closed = true
			c.bal.Close()
		}
		b.children, b.order = nil, nil
	})
}

// childUpdate records a child's report and, for round_robin's kind of
// parent, reconnects a child that went IDLE.
func (b *Balancer) childUpdate(c *Child, s balancer.State) {
	if b.closed || c.closed {
		return
	}
	c.State = s
	if s.ConnectivityState == connectivity.Idle && b.opts.AutoReconnect {
		c.bal.ExitIdle()
	}
	b.changed()
}

// changed schedules one OnChange after everything already queued.
func (b *Balancer) changed() {
	if b.flushQueued {
		return
	}
	b.flushQueued = true
	b.ser.Run(func() {
		b.flushQueued = false
		if b.closed || b.opts.OnChange == nil {
			return
		}
		b.opts.OnChange(View{Children: slices.Clone(b.order), ResolverErr: b.resolverErr})
	})
}

// childCC is the ClientConn a child is built with: it passes everything to
// the parent's ClientConn except state reports, which it hands to the
// Balancer, and it forwards the clock (clock.Provider) so that the whole
// tree runs on one clock.
type childCC struct {
	balancer.ClientConn
	b *Balancer
	c *Child
}

var _ clock.Provider = (*childCC)(nil)

func (cc *childCC) UpdateState(s balancer.State) {
	cc.b.ser.Run(func() { cc.b.childUpdate(cc.c, s) })
}

func (cc *childCC) Clock() clock.Clock { return cc.b.clk }
