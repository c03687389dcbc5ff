// Package pickfirst is conform's reference pick_first: the Happy Eyeballs
// leaf policy of gRFC A61 with the sticky TRANSIENT_FAILURE and address
// shuffling of gRFC A62, registered as conform_pick_first.
//
// All time and randomness come from clock.From(cc), so the same code runs on
// wall time in a grpc-go channel and on virtual time in the simulator.
package pickfirst

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/serial"
)

// Name is the name conform_pick_first is registered under. It cannot collide
// with grpc-go's own pick_first.
const Name = "conform_pick_first"

// timerPurpose names the Happy Eyeballs timer in A61's words.
const timerPurpose = "connection attempt delay"

func init() {
	balancer.Register(builder{})
}

type builder struct{}

var (
	_ balancer.Builder      = builder{}
	_ balancer.ConfigParser = builder{}
	_ clock.Aware           = builder{}
)

func (builder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &pickFirst{
		cc:   cc,
		clk:  clock.From(cc),
		cfg:  defaultConfig(),
		subs: make(map[addrKey]*subchannel),
	}
}

func (builder) Name() string { return Name }

func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return parseConfig(js)
}

// OnClockSeam marks the policy as reading time only through harness/clock.
func (builder) OnClockSeam() {}

// phase is where the policy is in A61's algorithm.
type phase int

const (
	// phaseStart: no address list yet, or the last one was empty.
	phaseStart phase = iota
	// phaseFirstPass: the Happy Eyeballs pass over the current list.
	phaseFirstPass
	// phaseRetrying: the first pass failed on every address; every
	// subchannel is reconnected whenever it reports IDLE (A61) and the
	// policy reports TRANSIENT_FAILURE until one is READY (A62).
	phaseRetrying
	// phaseReady: a subchannel has been chosen; it is the only one left.
	phaseReady
	// phaseIdle: the chosen connection was lost; nothing connects until
	// ExitIdle or a pick (A62, Background).
	phaseIdle
)

// subchannel is the policy's record of one SubConn, which has one address.
type subchannel struct {
	sc   balancer.SubConn
	addr resolver.Address
	// state is the raw connectivity state last reported; a new SubConn is
	// IDLE.
	state connectivity.State
	// failedInPass: a connection attempt failed (or was found in backoff)
	// during the current pass.
	failedInPass bool
	// seq orders subchannels by creation, for repeatable iteration.
	seq uint64
}

// pickFirst is one conform_pick_first instance. Every field is touched only
// from functions run by ser.
type pickFirst struct {
	cc  balancer.ClientConn
	clk clock.Clock
	// ser runs the policy's work (serial.Queue): the channel's calls,
	// Connection Attempt Delay timers, the IDLE picker's request to leave
	// IDLE, and ClientConn calls back into the policy from inside its own.
	ser serial.Queue

	cfg    *lbConfig
	health bool // generic health reporting, set by a parent policy

	phase phase
	// addrs is the current list: shuffled, flattened, de-duplicated and
	// interleaved. The first pass walks it in order.
	addrs []resolver.Address
	subs  map[addrKey]*subchannel
	seq   uint64 // of the last subchannel created
	// next is the index in addrs of the next address the first pass will
	// try; every address before it has had its attempt.
	next int
	// timer is the pending Connection Attempt Delay, if any; timerGen tells
	// a firing that lost a race with Stop from a current one.
	timer    clock.Timer
	timerGen uint64
	// chosen is the READY subchannel in use (phaseReady).
	chosen *subchannel
	// sticky: TRANSIENT_FAILURE was reported because every address failed;
	// it stays until a subchannel is READY (A62, Use sticky-TF by default).
	sticky bool
	// failures counts connection failures after the first pass; re-resolution
	// is requested whenever it reaches the number of subchannels (A61).
	failures int
	// lastErr is the last connection error, with the address it came from:
	// failing pickers carry it (A61, Use pick_first as the Universal Leaf
	// Policy: errors must stay useful).
	lastErr     error
	lastErrAddr string

	state    connectivity.State // last reported
	reported bool
	closed   bool
}

func (b *pickFirst) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg := defaultConfig()
	if s.BalancerConfig != nil {
		c, ok := s.BalancerConfig.(*lbConfig)
		if !ok {
			return fmt.Errorf("%s: config of type %T, want its own: %w", Name, s.BalancerConfig, balancer.ErrBadResolverState)
		}
		cfg = c
	}
	endpoints := s.ResolverState.Endpoints
	if len(endpoints) == 0 {
		// A resolver that predates endpoints: each address is an endpoint.
		for _, a := range s.ResolverState.Addresses {
			endpoints = append(endpoints, resolver.Endpoint{Addresses: []resolver.Address{a}})
		}
	}
	var err error
	if countAddresses(endpoints) == 0 {
		err = balancer.ErrBadResolverState
	}
	health := healthReportingEnabled(s.ResolverState)
	b.ser.Run(func() { b.updateList(cfg, health, endpoints) })
	return err
}

func countAddresses(endpoints []resolver.Endpoint) int {
	n := 0
	for _, e := range endpoints {
		n += len(e.Addresses)
	}
	return n
}

func (b *pickFirst) ResolverError(err error) {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		// Keep using a good list (and, in TRANSIENT_FAILURE, its more
		// useful connection error); fail RPCs with the resolver's error only
		// when there is no list.
		if len(b.addrs) > 0 {
			return
		}
		b.report(connectivity.TransientFailure, &errPicker{fmt.Errorf("%s: name resolver error: %v", Name, err)})
	})
}

// UpdateSubConnState is not used: every SubConn has a StateListener.
func (b *pickFirst) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (b *pickFirst) ExitIdle() { b.ser.Run(b.exitIdle) }

func (b *pickFirst) Close() {
	b.ser.Run(func() {
		b.closed = true
		b.stopTimer()
		for _, s := range b.sorted() {
			s.sc.Shutdown()
		}
		b.subs = nil
		b.chosen = nil
	})
}

// updateList takes a new address list. On return the policy is connected on
// a subchannel the new list still names, or has started a new first pass
// (A61: every new address list starts a Happy Eyeballs pass, subchannels for
// addresses on both lists being reused), or is IDLE waiting for ExitIdle.
func (b *pickFirst) updateList(cfg *lbConfig, health bool, endpoints []resolver.Endpoint) {
	if b.closed {
		return
	}
	b.cfg, b.health = cfg, health
	// A62 shuffles on every update, through the clock's randomness.
	addrs := orderAddresses(endpoints, cfg.shuffleAddressList, b.clk.Rand())
	b.addrs = addrs
	wanted := make(map[addrKey]bool, len(addrs))
	for _, a := range addrs {
		wanted[keyOf(a)] = true
	}
	for _, s := range b.sorted() {
		if !wanted[keyOf(s.addr)] {
			b.shutdown(s)
		}
	}
	if len(addrs) == 0 {
		b.stopTimer()
		b.phase, b.chosen, b.sticky = phaseStart, nil, false
		b.report(connectivity.TransientFailure, &errPicker{fmt.Errorf("%s: the resolver produced no addresses", Name)})
		return
	}
	if b.chosen != nil && b.subs[keyOf(b.chosen.addr)] == b.chosen {
		// The connection in use is still on the list: keep it.
		return
	}
	b.chosen = nil
	b.stopTimer()
	switch {
	case b.phase == phaseIdle:
		// Stay lazy: the next pass starts on ExitIdle.
		return
	case b.sticky:
		// A62: stay in TRANSIENT_FAILURE through the new pass.
	default:
		b.report(connectivity.Connecting, queuePicker{})
	}
	b.startPass()
}

// exitIdle starts a new first pass after a lost connection.
func (b *pickFirst) exitIdle() {
	if b.closed || b.phase != phaseIdle || len(b.addrs) == 0 {
		return
	}
	b.report(connectivity.Connecting, queuePicker{})
	b.startPass()
}

// startPass begins A61's Happy Eyeballs pass at the head of the list.
func (b *pickFirst) startPass() {
	b.phase = phaseFirstPass
	b.failures = 0
	for _, s := range b.subs {
		s.failedInPass = false
	}
	b.attemptFrom(0)
}

// attemptFrom starts the pass's attempt on addrs[i], or on the first address
// from i on that is not in backoff. A61, Happy Eyeballs in the pick_first LB
// Policy, when the pass reaches a subchannel:
//   - IDLE: request a connection;
//   - CONNECTING: treat it as if the connection had just been requested;
//   - TRANSIENT_FAILURE: it is in backoff after a recent failure, so count
//     it as attempted and failed and move on at once.
//
// After a request (real or treated as one) on any address but the last, the
// Connection Attempt Delay timer starts. On return either an attempt is in
// flight with next just past it, or the pass has reached the end of the list
// (and has ended if every address failed).
func (b *pickFirst) attemptFrom(i int) {
	for ; i < len(b.addrs); i++ {
		s := b.subFor(b.addrs[i])
		if s == nil {
			return // the channel is shutting down
		}
		switch s.state {
		case connectivity.Idle:
			b.next = i + 1
			s.sc.Connect()
			b.startTimer(i)
			return
		case connectivity.Connecting:
			b.next = i + 1
			b.startTimer(i)
			return
		case connectivity.TransientFailure:
			s.failedInPass = true
		case connectivity.Ready:
			b.choose(s)
			return
		}
	}
	b.next = len(b.addrs)
	b.maybeEndPass()
}

// startTimer starts the Connection Attempt Delay after an attempt on
// addrs[i]; none follows the last address (A61: wait for that attempt).
// Earlier attempts are never interrupted: the timer only starts the next.
func (b *pickFirst) startTimer(i int) {
	b.stopTimer()
	if i+1 >= len(b.addrs) {
		return
	}
	b.timerGen++
	gen := b.timerGen
	b.timer = b.clk.AfterFunc(timerPurpose, b.cfg.connectionAttemptDelay, func() {
		b.ser.Run(func() {
			if b.closed || b.timer == nil || b.timerGen != gen {
				return
			}
			b.timer = nil
			if b.phase == phaseFirstPass && b.next == i+1 {
				b.attemptFrom(i + 1)
			}
		})
	})
}

func (b *pickFirst) stopTimer() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.timerGen++
}

// subFor returns the subchannel for addr, creating it (IDLE) if needed.
func (b *pickFirst) subFor(addr resolver.Address) *subchannel {
	k := keyOf(addr)
	if s, ok := b.subs[k]; ok {
		return s
	}
	b.seq++
	s := &subchannel{addr: addr, state: connectivity.Idle, seq: b.seq}
	sc, err := b.cc.NewSubConn([]resolver.Address{addr}, balancer.NewSubConnOptions{
		StateListener: func(st balancer.SubConnState) {
			b.ser.Run(func() { b.onSubConnState(s, st) })
		},
	})
	if err != nil {
		return nil
	}
	s.sc = sc
	b.subs[k] = s
	return s
}

// sorted returns the subchannels in creation order: iterating a map would
// make the order of shutdowns, and so the traces, vary from run to run.
func (b *pickFirst) sorted() []*subchannel {
	out := make([]*subchannel, 0, len(b.subs))
	for _, s := range b.subs {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y *subchannel) int { return cmp.Compare(x.seq, y.seq) })
	return out
}

func (b *pickFirst) shutdown(s *subchannel) {
	s.sc.Shutdown()
	delete(b.subs, keyOf(s.addr))
	if b.chosen == s {
		b.chosen = nil
	}
}

// onSubConnState handles a raw connectivity change of one subchannel.
func (b *pickFirst) onSubConnState(s *subchannel, st balancer.SubConnState) {
	if b.closed || b.subs[keyOf(s.addr)] != s {
		return // shut down already: its news no longer matters
	}
	old := s.state
	s.state = st.ConnectivityState
	if s.state == connectivity.TransientFailure {
		b.noteError(s, st.ConnectionError)
	}

	if b.chosen == s {
		if s.state != connectivity.Ready {
			b.lostConnection()
		}
		return
	}
	if s.state == connectivity.Ready {
		// A61: the first subchannel to report READY wins, whether or not
		// the pass asked it to connect.
		b.choose(s)
		return
	}

	switch b.phase {
	case phaseFirstPass:
		failed := s.state == connectivity.TransientFailure ||
			(old == connectivity.Connecting && s.state == connectivity.Idle)
		if !failed {
			return
		}
		s.failedInPass = true
		// The attempt in progress failed before its timer fired: move on
		// to the next address now.
		if b.next > 0 && b.next < len(b.addrs) && keyOf(b.addrs[b.next-1]) == keyOf(s.addr) {
			b.stopTimer()
			b.attemptFrom(b.next)
			return
		}
		b.maybeEndPass()

	case phaseRetrying:
		// A61: after the first pass, connect whenever a subchannel reports
		// IDLE (its backoff is over), and count failures; each time the
		// count reaches the number of subchannels, ask for re-resolution.
		switch s.state {
		case connectivity.Idle:
			s.sc.Connect()
		case connectivity.TransientFailure:
			b.failures++
			if b.failures >= len(b.subs) {
				b.failures = 0
				b.cc.ResolveNow(resolver.ResolveNowOptions{})
				b.report(connectivity.TransientFailure, &errPicker{b.failureError()})
			}
		}
	}
}

// noteError remembers the last connection error for failing pickers.
func (b *pickFirst) noteError(s *subchannel, err error) {
	if err == nil {
		err = errors.New("connection failed")
	}
	b.lastErr, b.lastErrAddr = err, s.addr.Addr
}

// maybeEndPass ends the first pass once it has reached the end of the list
// and every address has failed at least once (A61). Then, as A61 and A62
// say, it requests re-resolution, reports TRANSIENT_FAILURE (sticky until
// READY), and connects every subchannel whose backoff is already over.
func (b *pickFirst) maybeEndPass() {
	if b.phase != phaseFirstPass || b.next < len(b.addrs) {
		return
	}
	for _, a := range b.addrs {
		if s := b.subs[keyOf(a)]; s == nil || !s.failedInPass {
			return
		}
	}
	b.phase = phaseRetrying
	b.failures = 0
	b.sticky = true
	b.cc.ResolveNow(resolver.ResolveNowOptions{})
	b.report(connectivity.TransientFailure, &errPicker{b.failureError()})
	for _, a := range b.addrs {
		if s := b.subs[keyOf(a)]; s != nil && s.state == connectivity.Idle {
			s.sc.Connect()
		}
	}
}

func (b *pickFirst) failureError() error {
	if b.lastErr == nil {
		return fmt.Errorf("%s: failed to connect to all %d addresses", Name, len(b.addrs))
	}
	return fmt.Errorf("%s: failed to connect to all %d addresses; last error: %s: %v", Name, len(b.addrs), b.lastErrAddr, b.lastErr)
}

// choose makes s, which is READY, the connection in use: the timer is
// cancelled and every other subchannel shut down (A61, Happy Eyeballs in
// the pick_first LB Policy). Without health reporting the policy reports
// READY; with it, the chosen subchannel's health decides what is reported
// (A61, Generic Health Reporting Mechanism), and until the first health
// update the previous state (CONNECTING, or a sticky TRANSIENT_FAILURE)
// stands.
func (b *pickFirst) choose(s *subchannel) {
	b.stopTimer()
	for _, o := range b.sorted() {
		if o != s {
			b.shutdown(o)
		}
	}
	b.chosen, b.phase, b.sticky, b.failures = s, phaseReady, false, 0
	if !b.health {
		b.report(connectivity.Ready, &readyPicker{sc: s.sc})
		return
	}
	s.sc.RegisterHealthListener(func(st balancer.SubConnState) {
		b.ser.Run(func() { b.onHealth(s, st) })
	})
}

// onHealth reports the chosen subchannel's health as the policy's state.
func (b *pickFirst) onHealth(s *subchannel, st balancer.SubConnState) {
	if b.closed || b.chosen != s || s.state != connectivity.Ready {
		return
	}
	switch st.ConnectivityState {
	case connectivity.Ready:
		b.report(connectivity.Ready, &readyPicker{sc: s.sc})
	case connectivity.TransientFailure:
		err := st.ConnectionError
		if err == nil {
			err = errors.New("unhealthy")
		}
		b.report(connectivity.TransientFailure, &errPicker{fmt.Errorf("%s: %s: health check failed: %v", Name, s.addr.Addr, err)})
	default:
		b.report(connectivity.Connecting, queuePicker{})
	}
}

// lostConnection handles the chosen subchannel leaving READY: the policy
// reports IDLE and does not reconnect by itself (A62, Background); the next
// pick or ExitIdle starts a new pass. It asks for re-resolution, as gRPC's
// pick_first does when its connection goes away.
func (b *pickFirst) lostConnection() {
	b.chosen = nil
	b.phase = phaseIdle
	b.cc.ResolveNow(resolver.ResolveNowOptions{})
	b.report(connectivity.Idle, newIdlePicker(func() { b.ser.Run(b.exitIdle) }))
}

// report sends state and picker to the parent. A repeated CONNECTING or IDLE
// is not sent again: its picker would behave the same.
func (b *pickFirst) report(state connectivity.State, p balancer.Picker) {
	if b.reported && b.state == state && (state == connectivity.Connecting || state == connectivity.Idle) {
		return
	}
	b.state, b.reported = state, true
	b.cc.UpdateState(balancer.State{ConnectivityState: state, Picker: p})
}
