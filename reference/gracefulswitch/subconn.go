package gracefulswitch

import (
	"slices"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

// Subchannels are shared between the children (L9, Swapping out balancer:
// "For connections already exist, they will be reused and copied to a new
// pool ... The purpose here is to avoid closing and reopening the same
// connection when old balancer and new balancer use the same addresses").
//
// Every subchannel a child creates is a *subConn, one user's handle on a
// *shared, the channel's subchannel. When the pending child asks for a
// subchannel to the addresses a subchannel of the current child has, it
// joins that one instead of a new one being created:
//   - it starts, as any new subchannel, with the user's view IDLE; the
//     subchannel's own state, when it is not IDLE, is delivered to it after
//     the call into the Balancer during which it joined returns (serialized
//     with the channel's calls, never re-entrantly);
//   - every later state the channel reports reaches every user not shut
//     down;
//   - a user's Shutdown ends its use (it is told SHUTDOWN, as a subchannel's
//     Shutdown tells); the channel's subchannel is shut down only when its
//     last user shuts it down.
//
// With one user, a *subConn passes everything through at once: a channel
// without a switch under way sees exactly the calls it saw without it.

// shared is one subchannel of the channel and its users. Guarded by gs.mu.
type shared struct {
	gs    *Balancer
	sc    balancer.SubConn // the channel's
	addrs []resolver.Address
	hc    bool // NewSubConnOptions.HealthCheckEnabled

	state  balancer.SubConnState // the channel's last report (IDLE before one)
	users  []*subConn            // in join order, shut down ones included
	health *balancer.SubConnState
	gone   bool // every user shut it down, or the channel reported SHUTDOWN
}

// subConn is one child's handle on a shared subchannel. It embeds the
// channel's SubConn (as grpc-go requires) for producers; the methods a
// policy calls are overridden.
type subConn struct {
	balancer.SubConn
	sh       *shared
	owner    *child
	listener func(balancer.SubConnState)

	seen     connectivity.State // the last state this user was told
	shut     bool               // the user called Shutdown
	finished bool               // it was told SHUTDOWN
	health   func(balancer.SubConnState)
}

var _ balancer.SubConn = (*subConn)(nil)

func (sh *shared) liveUsersLocked() int {
	n := 0
	for _, u := range sh.users {
		if !u.shut {
			n++
		}
	}
	return n
}

func sameAddrs(a, b []resolver.Address) bool {
	return slices.EqualFunc(a, b, func(x, y resolver.Address) bool {
		return x.Addr == y.Addr && x.ServerName == y.ServerName && x.Attributes.Equal(y.Attributes)
	})
}

// joinableLocked is the current child's live subchannel to addrs that the
// pending child c may join, or nil.
func (gs *Balancer) joinableLocked(c *child, addrs []resolver.Address, hc bool) *shared {
	if c != gs.pending || gs.current == nil {
		return nil
	}
	for _, sh := range gs.pool {
		if sh.gone || sh.hc != hc || !sameAddrs(sh.addrs, addrs) {
			continue
		}
		held, mine := false, false
		for _, u := range sh.users {
			if u.shut {
				continue
			}
			held = held || u.owner == gs.current
			mine = mine || u.owner == c
		}
		if held && !mine {
			return sh
		}
	}
	return nil
}

// NewSubConn gives the pending child the current child's subchannel to the
// same addresses, when there is one, and otherwise creates one.
func (c *child) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	gs := c.gs
	gs.mu.Lock()
	if sh := gs.joinableLocked(c, addrs, opts.HealthCheckEnabled); sh != nil {
		u := &subConn{SubConn: sh.sc, sh: sh, owner: c, listener: opts.StateListener, seen: connectivity.Idle}
		sh.users = append(sh.users, u)
		gs.due = append(gs.due, u)
		gs.mu.Unlock()
		return u, nil
	}
	gs.mu.Unlock()
	sh := &shared{gs: gs, addrs: slices.Clone(addrs), hc: opts.HealthCheckEnabled, state: balancer.SubConnState{ConnectivityState: connectivity.Idle}}
	u := &subConn{sh: sh, owner: c, listener: opts.StateListener, seen: connectivity.Idle}
	sh.users = []*subConn{u}
	o := opts
	o.StateListener = sh.onState
	sc, err := c.ClientConn.NewSubConn(addrs, o)
	if err != nil {
		return nil, err
	}
	gs.mu.Lock()
	sh.sc, u.SubConn = sc, sc
	gs.pool = append(gs.pool, sh)
	gs.mu.Unlock()
	return u, nil
}

// RemoveSubConn is the deprecated form of SubConn.Shutdown.
func (c *child) RemoveSubConn(sc balancer.SubConn) { sc.Shutdown() }

// UpdateAddresses is the deprecated form of SubConn.UpdateAddresses.
func (c *child) UpdateAddresses(sc balancer.SubConn, addrs []resolver.Address) {
	sc.UpdateAddresses(addrs)
}

// onState is the channel's report on the subchannel: it reaches every user
// not shut down; SHUTDOWN reaches every user not yet told it.
func (sh *shared) onState(s balancer.SubConnState) {
	gs := sh.gs
	gs.deliverDue()
	defer gs.deliverDue()
	gs.mu.Lock()
	sh.state = s
	sh.health = nil // a state change silences health listeners
	last := s.ConnectivityState == connectivity.Shutdown
	if last {
		sh.gone = true
		gs.dropLocked(sh)
	}
	var buf [4]*subConn // no allocation on the path of every state change
	to := buf[:0]
	for _, u := range sh.users {
		u.health = nil
		switch {
		case last && !u.finished:
			u.finished = true
			to = append(to, u)
		case !last && !u.shut:
			u.seen = s.ConnectivityState
			to = append(to, u)
		}
	}
	gs.mu.Unlock()
	for _, u := range to {
		u.deliver(s)
	}
}

// deliver tells the user's policy a state of its subchannel.
func (u *subConn) deliver(s balancer.SubConnState) {
	if u.listener != nil {
		u.listener(s)
		return
	}
	u.owner.gs.mu.Lock()
	b := u.owner.bal
	u.owner.gs.mu.Unlock()
	if b != nil {
		b.UpdateSubConnState(u, s)
	}
}

// deliverDue tells each user that joined a subchannel, or shut down a
// subchannel others still use, what it has not been told yet. It runs at
// the start and the end of every call into the Balancer (and of every
// report of the channel's), so the news reaches a policy serialized with the
// channel's other calls and never re-entrantly.
func (gs *Balancer) deliverDue() {
	gs.mu.Lock()
	if gs.delivering {
		gs.mu.Unlock()
		return
	}
	gs.delivering = true
	for len(gs.due) > 0 || len(gs.healthDue) > 0 {
		var f func()
		if len(gs.due) > 0 {
			u := gs.due[0]
			gs.due = gs.due[1:]
			f = u.dueLocked()
		} else {
			f = gs.healthDue[0]
			gs.healthDue = gs.healthDue[1:]
		}
		if f == nil {
			continue
		}
		gs.mu.Unlock()
		f()
		gs.mu.Lock()
	}
	gs.delivering = false
	gs.mu.Unlock()
}

// dueLocked is the delivery of what u has not been told yet, or nil.
func (u *subConn) dueLocked() func() {
	var s balancer.SubConnState
	switch {
	case u.shut && !u.finished:
		u.finished = true
		s = balancer.SubConnState{ConnectivityState: connectivity.Shutdown}
	case !u.shut && u.sh.state.ConnectivityState != u.seen:
		u.seen = u.sh.state.ConnectivityState
		s = u.sh.state
	default:
		return nil
	}
	return func() { u.deliver(s) }
}

// dropLocked takes sh out of the pool.
func (gs *Balancer) dropLocked(sh *shared) {
	gs.pool = slices.DeleteFunc(gs.pool, func(x *shared) bool { return x == sh })
}

// lockLive takes the switch's lock when this handle and its subchannel are
// still live, and reports whether it did: a call on a handle shut down, or
// on a subchannel already gone, does nothing.
func (u *subConn) lockLive() bool {
	u.sh.gs.mu.Lock()
	if u.shut || u.sh.gone {
		u.sh.gs.mu.Unlock()
		return false
	}
	return true
}

// Connect asks the subchannel to connect (a no-op unless it is IDLE).
func (u *subConn) Connect() {
	gs := u.sh.gs
	gs.mu.Lock()
	shut := u.shut
	gs.mu.Unlock()
	if !shut {
		u.sh.sc.Connect()
	}
}

// Shutdown ends this user's use of the subchannel. The last user's shuts
// the channel's subchannel down, which reports SHUTDOWN; an earlier user is
// told SHUTDOWN after the call during which it shut its handle down.
func (u *subConn) Shutdown() {
	if !u.lockLive() {
		return
	}
	sh, gs := u.sh, u.sh.gs
	u.shut, u.health = true, nil
	last := sh.liveUsersLocked() == 0
	if last {
		sh.gone = true
		gs.dropLocked(sh)
	} else {
		gs.due = append(gs.due, u)
	}
	gs.mu.Unlock()
	if last {
		sh.sc.Shutdown()
	}
}

// UpdateAddresses changes the subchannel's addresses, for every user of it.
func (u *subConn) UpdateAddresses(addrs []resolver.Address) {
	if !u.lockLive() {
		return
	}
	sh, gs := u.sh, u.sh.gs
	sh.addrs = slices.Clone(addrs)
	gs.mu.Unlock()
	sh.sc.UpdateAddresses(addrs)
}

// RegisterHealthListener watches the subchannel's health. The sole user's
// registration goes to the channel as it is. A user joining a subchannel
// whose health another user already watches is told the last health
// reported, after the current call, and every later one.
func (u *subConn) RegisterHealthListener(l func(balancer.SubConnState)) {
	if !u.lockLive() {
		return
	}
	sh, gs := u.sh, u.sh.gs
	watched := false
	for _, o := range sh.users {
		watched = watched || (o != u && !o.shut && o.health != nil)
	}
	u.health = l
	if l != nil && watched && sh.health != nil {
		h := *sh.health
		gs.healthDue = append(gs.healthDue, func() {
			gs.mu.Lock()
			cur := u.health
			if u.shut {
				cur = nil
			}
			gs.mu.Unlock()
			if cur != nil {
				cur(h)
			}
		})
		gs.mu.Unlock()
		return
	}
	gs.mu.Unlock()
	if l == nil && watched {
		return // the others still watch
	}
	var fan func(balancer.SubConnState)
	if l != nil {
		fan = sh.onHealth
	}
	sh.sc.RegisterHealthListener(fan)
}

// onHealth is the channel's health report: it reaches every user watching.
func (sh *shared) onHealth(s balancer.SubConnState) {
	gs := sh.gs
	gs.mu.Lock()
	sh.health = &s
	var buf [4]func(balancer.SubConnState)
	ls := buf[:0]
	for _, u := range sh.users {
		if !u.shut && u.health != nil {
			ls = append(ls, u.health)
		}
	}
	gs.mu.Unlock()
	for _, l := range ls {
		l(s)
	}
}

// String names the channel's subchannel.
func (u *subConn) String() string {
	if s, ok := u.sh.sc.(interface{ String() string }); ok {
		return s.String()
	}
	return "gracefulswitch subchannel"
}

// picker hands the channel its own SubConn for a pick of a child's handle.
type picker struct{ balancer.Picker }

func (p picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	res, err := p.Picker.Pick(info)
	if u, ok := res.SubConn.(*subConn); ok {
		res.SubConn = u.sh.sc
	}
	return res, err
}
