// Package overridehost is conform's reference xds_override_host: the
// stateful session affinity policy of gRFCs A55 and A60, with A61's
// address lists in the session cookie and A75's subchannel ownership,
// last_used_time sweep and picker. Registered as conform_xds_override_host.
//
// The session cookie reaches the picker through request metadata instead
// of an HTTP filter's call attribute: see SessionHeader.
//
// All time comes from clock.From(cc).
package overridehost

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/serial"
)

// Name is the name conform_xds_override_host is registered under.
const Name = "conform_xds_override_host"

// sweepPurpose names A75's periodic sweep of the subchannel map.
const sweepPurpose = "override host sweep"

// minSweepInterval is A75's minimum time between two sweeps.
const minSweepInterval = 5 * time.Second

func init() {
	balancer.Register(builder{})
}

type builder struct{}

var (
	_ balancer.Builder      = builder{}
	_ balancer.ConfigParser = builder{}
	_ clock.Aware           = builder{}
)

func (builder) Build(cc balancer.ClientConn, bopts balancer.BuildOptions) balancer.Balancer {
	return &ohBalancer{
		cc:      cc,
		bopts:   bopts,
		clk:     clock.From(cc),
		entries: make(map[string]*entry),
		subs:    make(map[*subchannel]bool),
	}
}

func (builder) Name() string { return Name }

func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return parseConfig(js)
}

// OnClockSeam marks the policy as reading time only through harness/clock.
func (builder) OnClockSeam() {}

// entry is one address's entry in A55's address map.
type entry struct {
	addr resolver.Address
	// addrList is what the cookie should carry when this address is used
	// (A61, Changes to Stateful Session Affinity): this address, then its
	// endpoint's other addresses, comma-separated.
	addrList string
	// health is the endpoint's EDS health status.
	health string
	// sub is the address's subchannel, owned by the child or the policy;
	// nil when there is none.
	sub *subchannel
	// lastUsed is A75's last_used_time, in nanoseconds of the clock's
	// UnixNano; 0 when never used. Pickers write it.
	lastUsed atomic.Int64
}

// subchannel is one subchannel of the channel's, as this policy tracks it.
type subchannel struct {
	sc balancer.SubConn
	// addr is its one address; "" when it has several (such a subchannel
	// has no entry).
	addr  string
	seq   uint64
	state connectivity.State
	// child is the child's handle while the child owns the subchannel;
	// nil when the policy owns it (A75).
	child    *childSub
	shutdown bool
}

// ohBalancer is one conform_xds_override_host instance.
//
// Its work runs on ser. mu guards the address map and the subchannel
// records (entries, subs, and the fields of entry and subchannel other than
// lastUsed), which pickers read and NewSubConn, called by the child at any
// time, changes. mu is a leaf lock: nothing is called with it held.
type ohBalancer struct {
	cc    balancer.ClientConn
	bopts balancer.BuildOptions
	clk   clock.Clock
	ser   serial.Queue

	// Touched only on ser.
	cfg           *lbConfig
	child         balancer.Balancer
	childName     string
	childState    balancer.State
	childReported bool
	picker        *picker // the last one reported
	sweep         clock.Timer
	sweepGen      uint64
	closed        bool

	mu      sync.RWMutex
	entries map[string]*entry
	subs    map[*subchannel]bool // live subchannels
	seq     uint64
}

func (b *ohBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*lbConfig)
	if !ok {
		return fmt.Errorf("%s: config of type %T, want its own: %w", Name, s.BalancerConfig, balancer.ErrBadResolverState)
	}
	var err error
	b.ser.Run(func() { err = b.update(cfg, s.ResolverState) })
	return err
}

// update takes a new config and endpoint list. On return the address map
// has one entry per address of the list (A55's address map, with A61's
// address lists), each showing its endpoint's EDS health status and the
// subchannel for the address if one is alive; entries for addresses no
// longer listed are gone and the subchannels the policy owned for them
// shut down; the child has the list without DRAINING endpoints (A55); and
// the sweep timer runs.
func (b *ohBalancer) update(cfg *lbConfig, rs resolver.State) error {
	if b.closed {
		return nil
	}
	b.cfg = cfg
	if b.child == nil || b.childName != cfg.childPolicy {
		if b.child != nil {
			b.child.Close()
		}
		b.childName, b.childReported = cfg.childPolicy, false
		b.child = balancer.Get(cfg.childPolicy).Build(&childCC{ClientConn: b.cc, b: b}, b.bopts)
	}
	eps := rs.Endpoints
	if len(eps) == 0 {
		for _, a := range rs.Addresses {
			eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{a}})
		}
	}

	var forChild []resolver.Endpoint
	var drop []*subchannel
	b.mu.Lock()
	seen := make(map[string]bool)
	for _, ep := range eps {
		status := HealthStatus(ep)
		if status != StatusDraining {
			forChild = append(forChild, ep)
		}
		for i, a := range ep.Addresses {
			if seen[a.Addr] {
				continue // an address of two endpoints: the first wins
			}
			seen[a.Addr] = true
			e := b.entries[a.Addr]
			if e == nil {
				e = &entry{sub: b.liveSubLocked(a.Addr)}
				b.entries[a.Addr] = e
			}
			list := []string{a.Addr}
			for j, o := range ep.Addresses {
				if j != i {
					list = append(list, o.Addr)
				}
			}
			e.addr, e.addrList, e.health = a, strings.Join(list, ","), status
		}
	}
	for addr, e := range b.entries {
		if seen[addr] {
			continue
		}
		delete(b.entries, addr)
		if e.sub != nil && e.sub.child == nil {
			drop = append(drop, e.sub)
		}
	}
	b.mu.Unlock()
	b.shutdownAll(drop)

	if b.sweep == nil {
		// A75: the first sweep runs idle_timeout after the start.
		b.startSweep(cfg.idleTimeout)
	}
	rs.Endpoints, rs.Addresses = forChild, nil
	err := b.child.UpdateClientConnState(balancer.ClientConnState{ResolverState: rs, BalancerConfig: cfg.childConfig})
	b.republish() // the statuses may have changed
	return err
}

// liveSubLocked returns the newest live subchannel for addr, if any: an
// address that comes back finds the subchannel the child kept for it.
func (b *ohBalancer) liveSubLocked(addr string) *subchannel {
	var best *subchannel
	for s := range b.subs {
		if s.addr == addr && !s.shutdown && (best == nil || s.seq > best.seq) {
			best = s
		}
	}
	return best
}

func (b *ohBalancer) shutdownAll(subs []*subchannel) {
	slices.SortFunc(subs, func(x, y *subchannel) int { return int(x.seq - y.seq) })
	for _, s := range subs {
		s.sc.Shutdown()
	}
}

func (b *ohBalancer) ResolverError(err error) {
	b.ser.Run(func() {
		if !b.closed && b.child != nil {
			b.child.ResolverError(err)
		}
	})
}

// UpdateSubConnState is not used: every SubConn has a StateListener.
func (b *ohBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (b *ohBalancer) ExitIdle() {
	b.ser.Run(func() {
		if !b.closed && b.child != nil {
			b.child.ExitIdle()
		}
	})
}

func (b *ohBalancer) Close() {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		b.closed = true
		b.stopSweep()
		if b.child != nil {
			b.child.Close()
		}
		var owned []*subchannel
		b.mu.Lock()
		for s := range b.subs {
			if s.child == nil && !s.shutdown {
				owned = append(owned, s)
			}
		}
		b.mu.Unlock()
		b.shutdownAll(owned)
	})
}

// recent reports whether e was used for a session within idle_timeout.
func (b *ohBalancer) recent(e *entry, now time.Time) bool {
	lu := e.lastUsed.Load()
	return lu != 0 && now.UnixNano()-lu < int64(b.cfg.idleTimeout)
}

// onSubState records a subchannel's raw state and passes it to the child
// while the child owns the subchannel. A picker that queued a session's
// RPC on some subchannel's progress is replaced, so that the RPC is picked
// again.
func (b *ohBalancer) onSubState(s *subchannel, st balancer.SubConnState) {
	b.mu.Lock()
	s.state = st.ConnectivityState
	if s.state == connectivity.Shutdown {
		s.shutdown = true
		delete(b.subs, s)
		if e := b.entries[s.addr]; e != nil && e.sub == s {
			e.sub = nil
		}
	}
	cs := s.child
	b.mu.Unlock()
	if cs != nil && cs.listener != nil {
		cs.listener(st)
	}
	if b.picker != nil && b.picker.queued.Load() {
		b.republish()
	}
}

// releaseByChild handles the child's Shutdown of cs. A75: if the
// subchannel's entry was used for a session within idle_timeout, the
// policy takes ownership instead of shutting it down (the child still sees
// SHUTDOWN); otherwise it is shut down.
func (b *ohBalancer) releaseByChild(cs *childSub) {
	if cs.released {
		return
	}
	cs.released = true
	s := cs.s
	b.mu.Lock()
	e := b.entries[s.addr]
	keep := !b.closed && s.child == cs && !s.shutdown && s.addr != "" && e != nil && e.sub == s && b.recent(e, b.clk.Now())
	if keep {
		s.child = nil
	}
	b.mu.Unlock()
	if !keep {
		s.sc.Shutdown() // SHUTDOWN reaches the child through onSubState
		return
	}
	if cs.listener != nil {
		cs.listener(balancer.SubConnState{ConnectivityState: connectivity.Shutdown})
	}
}

// newSubchannel creates a subchannel of the channel's, its states
// delivered to onSubState.
func (b *ohBalancer) newSubchannel(addrs []resolver.Address, opts balancer.NewSubConnOptions) (*subchannel, error) {
	s := &subchannel{state: connectivity.Idle}
	if len(addrs) == 1 {
		s.addr = addrs[0].Addr
	}
	opts.StateListener = func(st balancer.SubConnState) {
		b.ser.Run(func() { b.onSubState(s, st) })
	}
	sc, err := b.cc.NewSubConn(addrs, opts)
	if err != nil {
		return nil, err
	}
	s.sc = sc
	b.mu.Lock()
	b.seq++
	s.seq = b.seq
	b.subs[s] = true
	b.mu.Unlock()
	return s, nil
}

// childNewSubConn is the child's NewSubConn. A subchannel the policy owns
// for the address is handed to the child (ownership moves back; the child
// hears its current state) rather than duplicated; otherwise a new one is
// created and becomes the address's subchannel (A55: the most recent one).
func (b *ohBalancer) childNewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	cs := &childSub{b: b, listener: opts.StateListener}
	if len(addrs) == 1 {
		b.mu.Lock()
		if e := b.entries[addrs[0].Addr]; e != nil && e.sub != nil && e.sub.child == nil && !e.sub.shutdown {
			s := e.sub
			s.child, cs.s, cs.SubConn = cs, s, s.sc
			st := s.state
			b.mu.Unlock()
			if st != connectivity.Idle {
				b.ser.Run(func() {
					if s.child == cs && cs.listener != nil {
						cs.listener(balancer.SubConnState{ConnectivityState: st})
					}
				})
			}
			return cs, nil
		}
		b.mu.Unlock()
	}
	s, err := b.newSubchannel(addrs, opts)
	if err != nil {
		return nil, err
	}
	cs.s, cs.SubConn = s, s.sc
	b.mu.Lock()
	s.child = cs
	if e := b.entries[s.addr]; e != nil && s.addr != "" {
		e.sub = s
	}
	b.mu.Unlock()
	return cs, nil
}

// createFor gives e a subchannel owned by the policy, for a session whose
// cookie names it (A75, the picker's entry without a subchannel), and
// replaces the picker so that the queued RPC sees it.
func (b *ohBalancer) createFor(addr string) {
	if b.closed {
		return
	}
	b.mu.RLock()
	e := b.entries[addr]
	ok := e != nil && e.sub == nil
	var a resolver.Address
	if ok {
		a = e.addr
	}
	b.mu.RUnlock()
	if !ok {
		return
	}
	s, err := b.newSubchannel([]resolver.Address{a}, balancer.NewSubConnOptions{})
	if err != nil {
		return
	}
	b.mu.Lock()
	if b.entries[addr] == e && e.sub == nil {
		e.sub = s
		// Used for a session from now on, so that a sweep does not
		// take it away before the session's RPC is picked.
		e.lastUsed.Store(b.clk.Now().UnixNano())
		s = nil
	}
	b.mu.Unlock()
	if s != nil {
		s.sc.Shutdown()
	}
	b.republish()
}

// connect asks s to connect (the picker's IDLE case).
func (b *ohBalancer) connect(s *subchannel) {
	b.mu.RLock()
	dead := s.shutdown
	b.mu.RUnlock()
	if !b.closed && !dead {
		s.sc.Connect()
	}
}

// startSweep times the next sweep.
func (b *ohBalancer) startSweep(d time.Duration) {
	b.sweepGen++
	gen := b.sweepGen
	b.sweep = b.clk.AfterFunc(sweepPurpose, d, func() {
		b.ser.Run(func() {
			if !b.closed && gen == b.sweepGen {
				b.runSweep()
			}
		})
	})
}

func (b *ohBalancer) stopSweep() {
	if b.sweep != nil {
		b.sweep.Stop()
	}
	b.sweepGen++
}

// runSweep is A75's sweep: every subchannel the policy owns whose entry
// was not used for a session within idle_timeout is unreffed (shut down).
// The next sweep runs when the least recently used remaining entry would
// reach idle_timeout, at least 5 s from now, or idle_timeout from now
// when no entry was used within it.
func (b *ohBalancer) runSweep() {
	now := b.clk.Now()
	idle := b.cfg.idleTimeout
	next := idle
	var drop []*subchannel
	b.mu.Lock()
	for _, e := range b.entries {
		lu := e.lastUsed.Load()
		if lu == 0 || now.UnixNano()-lu >= int64(idle) {
			if e.sub != nil && e.sub.child == nil {
				drop = append(drop, e.sub)
				e.sub = nil
			}
			continue
		}
		next = min(next, time.Duration(lu+int64(idle)-now.UnixNano()))
	}
	b.mu.Unlock()
	b.shutdownAll(drop)
	b.startSweep(max(next, minSweepInterval))
}

// childUpdate records the child's state and reports it with a new picker.
func (b *ohBalancer) childUpdate(s balancer.State) {
	if b.closed {
		return
	}
	b.childState, b.childReported = s, true
	b.republish()
}

// republish reports the child's state with a new picker.
func (b *ohBalancer) republish() {
	if b.closed || !b.childReported {
		return
	}
	b.picker = &picker{b: b, child: b.childState.Picker, statuses: b.cfg.statuses}
	b.cc.UpdateState(balancer.State{ConnectivityState: b.childState.ConnectivityState, Picker: b.picker})
}

// childCC is the ClientConn the child is built with: subchannels it
// creates are tracked (childSub), its reports go through the serializer,
// and the clock is forwarded.
type childCC struct {
	balancer.ClientConn
	b *ohBalancer
}

var _ clock.Provider = (*childCC)(nil)

func (cc *childCC) Clock() clock.Clock { return cc.b.clk }

func (cc *childCC) UpdateState(s balancer.State) {
	cc.b.ser.Run(func() { cc.b.childUpdate(s) })
}

func (cc *childCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	return cc.b.childNewSubConn(addrs, opts)
}

func (cc *childCC) RemoveSubConn(sc balancer.SubConn) { sc.Shutdown() }

func (cc *childCC) UpdateAddresses(sc balancer.SubConn, addrs []resolver.Address) {
	sc.UpdateAddresses(addrs)
}

// childSub is the child's handle on a subchannel: the channel's SubConn
// with Shutdown intercepted (A75: the policy may keep it).
type childSub struct {
	balancer.SubConn
	b        *ohBalancer
	s        *subchannel
	listener func(balancer.SubConnState)
	released bool // touched only on b.ser
}

func (cs *childSub) Shutdown() { cs.b.ser.Run(func() { cs.b.releaseByChild(cs) }) }

// UpdateAddresses forwards the new list; the subchannel leaves the
// address map, as one whose address changed is no longer the entry's.
func (cs *childSub) UpdateAddresses(addrs []resolver.Address) {
	cs.SubConn.UpdateAddresses(addrs)
	cs.b.ser.Run(func() {
		cs.b.mu.Lock()
		defer cs.b.mu.Unlock()
		if e := cs.b.entries[cs.s.addr]; e != nil && e.sub == cs.s {
			e.sub = nil
		}
		cs.s.addr = ""
		if len(addrs) == 1 {
			cs.s.addr = addrs[0].Addr
		}
	})
}
