// Package outlierdetection is conform's reference outlier_detection: gRFC
// A50's policy with gRFC A61's changes (Outlier Detection): call results are
// counted and ejection decided per endpoint, not per address, and an
// ejected endpoint's subchannels are reported unhealthy through the generic
// health reporting mechanism (A61, Generic Health Reporting Mechanism), so
// that the pick_first under a petiole reports TRANSIENT_FAILURE for it while
// its connection management keeps seeing the raw connectivity state.
// Registered as conform_outlier_detection.
//
// All time and randomness (enforcementPercentage's draws) come from
// clock.From(cc).
package outlierdetection

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/serial"
)

// Name is the name conform_outlier_detection is registered under.
const Name = "conform_outlier_detection"

// timerPurpose names A50's interval timer.
const timerPurpose = "outlier detection interval"

// errEjected is the health error an ejected endpoint's subchannels report.
var errEjected = errors.New("ejected by outlier detection")

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
	return &odBalancer{
		cc:     cc,
		bopts:  bopts,
		clk:    clock.From(cc),
		byKey:  make(map[string]*endpoint),
		byAddr: make(map[string]*endpoint),
		subs:   make(map[*subConn]bool),
	}
}

func (builder) Name() string { return Name }

func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return parseConfig(js)
}

// OnClockSeam marks the policy as reading time only through harness/clock.
func (builder) OnClockSeam() {}

// endpoint is A61's entry in the map of ejection state, keyed by the
// unordered set of the endpoint's addresses.
type endpoint struct {
	key string
	// counter is A50's call counter; pickers update it concurrently.
	counter callCounter
	// ejectedAt is the ejection timestamp; zero when not ejected.
	ejectedAt time.Time
	// multiplier is the ejection time multiplier, starting at 0.
	multiplier int64
}

func (e *endpoint) ejected() bool { return !e.ejectedAt.IsZero() }

// odBalancer is one conform_outlier_detection instance. Every field is
// touched only from functions run by ser, except what the pickers read
// through atomics (subConn.ep, endpoint.counter).
type odBalancer struct {
	cc    balancer.ClientConn
	bopts balancer.BuildOptions
	clk   clock.Clock
	// ser runs the channel's calls, the child's reports, subchannel state
	// and health updates and the interval timer, one at a time.
	ser serial.Queue

	cfg       *lbConfig
	child     balancer.Balancer
	childName string

	// endpoints in the order of the last resolver update (so that the
	// algorithms, and their random draws, run in a repeatable order).
	endpoints []*endpoint
	byKey     map[string]*endpoint
	// byAddr is A61's subchannel map's link to the endpoint map: each
	// address's endpoint (the first endpoint listing it).
	byAddr map[string]*endpoint
	// subs are the live subchannel wrappers handed to the child.
	subs map[*subConn]bool
	seq  uint64 // of the last wrapper, for repeatable iteration

	timer      clock.Timer
	timerGen   uint64
	timerStart time.Time // A50's timer start timestamp; zero: unset

	childState    balancer.State
	childReported bool
	closed        bool
}

// endpointKey is the unordered set of an endpoint's addresses.
func endpointKey(e resolver.Endpoint) string {
	addrs := make([]string, 0, len(e.Addresses))
	for _, a := range e.Addresses {
		addrs = append(addrs, a.Addr)
	}
	slices.Sort(addrs)
	return strings.Join(slices.Compact(addrs), ",")
}

func (b *odBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*lbConfig)
	if !ok {
		return fmt.Errorf("%s: config of type %T, want its own: %w", Name, s.BalancerConfig, balancer.ErrBadResolverState)
	}
	var err error
	b.ser.Run(func() { err = b.update(cfg, s.ResolverState) })
	return err
}

// update takes a new config and address list (A50, Outlier Detection
// Behavior, with A61's endpoint map). On return the endpoint map holds one
// entry per endpoint of the list (kept entries keep their counters and
// ejection state), every wrapper points at its address's endpoint and shows
// that endpoint's ejection, the timer follows A50's rules for a new config,
// and the child has the update.
func (b *odBalancer) update(cfg *lbConfig, rs resolver.State) error {
	if b.closed {
		return nil
	}
	oldCount := b.cfg != nil && !b.cfg.noop()
	b.cfg = cfg
	if b.child == nil || b.childName != cfg.childPolicy {
		if b.child != nil {
			b.child.Close()
		}
		b.childName = cfg.childPolicy
		b.childReported = false
		b.child = balancer.Get(cfg.childPolicy).Build(&childCC{ClientConn: b.cc, b: b}, b.bopts)
	}

	eps := rs.Endpoints
	if len(eps) == 0 {
		for _, a := range rs.Addresses {
			eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{a}})
		}
	}
	byKey := make(map[string]*endpoint, len(eps))
	byAddr := make(map[string]*endpoint)
	var order []*endpoint
	for _, e := range eps {
		k := endpointKey(e)
		if k == "" || byKey[k] != nil {
			continue
		}
		ep := b.byKey[k]
		if ep == nil {
			ep = &endpoint{key: k}
			ep.counter.reset()
		}
		byKey[k] = ep
		order = append(order, ep)
		for _, a := range e.Addresses {
			if byAddr[a.Addr] == nil {
				byAddr[a.Addr] = ep
			}
		}
	}
	b.endpoints, b.byKey, b.byAddr = order, byKey, byAddr
	for _, s := range b.sortedSubs() {
		b.relink(s)
	}

	b.stopTimer()
	if cfg.noop() {
		// A50: no algorithm configured: no timer, no ejections.
		b.timerStart = time.Time{}
		for _, ep := range b.endpoints {
			if ep.ejected() {
				b.uneject(ep)
			}
			ep.multiplier = 0
		}
	} else if b.timerStart.IsZero() {
		b.timerStart = b.clk.Now()
		for _, ep := range b.endpoints {
			ep.counter.reset()
		}
		b.startTimer(cfg.interval)
	} else {
		b.startTimer(max(cfg.interval-b.clk.Now().Sub(b.timerStart), 0))
	}

	err := b.child.UpdateClientConnState(balancer.ClientConnState{ResolverState: rs, BalancerConfig: cfg.childConfig})
	if b.childReported && oldCount != !cfg.noop() {
		b.report() // the picker's counting changed
	}
	return err
}

func (b *odBalancer) ResolverError(err error) {
	b.ser.Run(func() {
		if !b.closed && b.child != nil {
			b.child.ResolverError(err)
		}
	})
}

// UpdateSubConnState is not used: every SubConn has a StateListener.
func (b *odBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (b *odBalancer) ExitIdle() {
	b.ser.Run(func() {
		if !b.closed && b.child != nil {
			b.child.ExitIdle()
		}
	})
}

func (b *odBalancer) Close() {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		b.closed = true
		b.stopTimer()
		if b.child != nil {
			b.child.Close()
		}
	})
}

// startTimer starts the interval timer for d.
func (b *odBalancer) startTimer(d time.Duration) {
	b.timerGen++
	gen := b.timerGen
	b.timer = b.clk.AfterFunc(timerPurpose, d, func() {
		b.ser.Run(func() {
			if b.closed || gen != b.timerGen {
				return
			}
			b.timer = nil
			b.onInterval()
		})
	})
}

func (b *odBalancer) stopTimer() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.timerGen++
}

// onInterval is A50's timer (Outlier Detection Behavior, steps 1 to 5),
// per endpoint (A61). On return the ejections and un-ejections of this
// interval are applied and the next interval is timed.
func (b *odBalancer) onInterval() {
	now := b.clk.Now()
	b.timerStart = now // step 1, and the timer start timestamp
	for _, ep := range b.endpoints {
		ep.counter.swap() // step 2
	}
	if b.cfg.successRate != nil {
		b.successRate(now) // step 3
	}
	if b.cfg.failurePercentage != nil {
		b.failurePercentage(now) // step 4
	}
	for _, ep := range b.endpoints { // step 5
		switch {
		case !ep.ejected():
			if ep.multiplier > 0 {
				ep.multiplier--
			}
		default:
			d := min(b.cfg.baseEjectionTime*time.Duration(ep.multiplier), max(b.cfg.baseEjectionTime, b.cfg.maxEjectionTime))
			if now.After(ep.ejectedAt.Add(d)) {
				b.uneject(ep)
			}
		}
	}
	b.startTimer(b.cfg.interval)
}

// atMaxEjection is A50's "the percentage of ejected addresses is greater
// than or equal to max_ejection_percent", over endpoints (A61).
func (b *odBalancer) atMaxEjection() bool {
	n := 0
	for _, ep := range b.endpoints {
		if ep.ejected() {
			n++
		}
	}
	return float64(n)*100/float64(len(b.endpoints)) >= float64(b.cfg.maxEjectionPercent)
}

// successRate is A50's Success Rate Algorithm, over endpoints.
func (b *odBalancer) successRate(now time.Time) {
	c := b.cfg.successRate
	var rates []float64
	for _, ep := range b.endpoints {
		if ok, fail := ep.counter.last(); ok+fail >= uint64(c.RequestVolume) && ok+fail > 0 {
			rates = append(rates, float64(ok)/float64(ok+fail))
		}
	}
	if len(rates) == 0 || len(rates) < int(c.MinimumHosts) {
		return
	}
	var mean, sq float64
	for _, r := range rates {
		mean += r
	}
	mean /= float64(len(rates))
	for _, r := range rates {
		sq += (r - mean) * (r - mean)
	}
	stdev := math.Sqrt(sq / float64(len(rates)))
	required := mean - stdev*(float64(c.StdevFactor)/1000)
	for _, ep := range b.endpoints {
		if b.atMaxEjection() {
			return
		}
		ok, fail := ep.counter.last()
		if ok+fail < uint64(c.RequestVolume) || ok+fail == 0 {
			continue
		}
		if float64(ok)/float64(ok+fail) < required {
			b.maybeEject(ep, c.EnforcementPercentage, now)
		}
	}
}

// failurePercentage is A50's Failure Percentage Algorithm, over endpoints.
func (b *odBalancer) failurePercentage(now time.Time) {
	c := b.cfg.failurePercentage
	hosts := 0
	for _, ep := range b.endpoints {
		if ok, fail := ep.counter.last(); ok+fail >= uint64(c.RequestVolume) && ok+fail > 0 {
			hosts++
		}
	}
	if hosts == 0 || hosts < int(c.MinimumHosts) {
		return
	}
	for _, ep := range b.endpoints {
		if b.atMaxEjection() {
			return
		}
		ok, fail := ep.counter.last()
		if ok+fail < uint64(c.RequestVolume) || ok+fail == 0 {
			continue
		}
		if float64(fail)*100/float64(ok+fail) > float64(c.Threshold) {
			b.maybeEject(ep, c.EnforcementPercentage, now)
		}
	}
}

// maybeEject draws a random integer in [0, 100) and ejects ep if it is
// below enforcement (A50). An endpoint already ejected is left alone (it
// carries no traffic, so it can only be an outlier by a stale count).
func (b *odBalancer) maybeEject(ep *endpoint, enforcement uint32, now time.Time) {
	if ep.ejected() {
		return
	}
	if b.clk.Rand().Intn(100) >= int(enforcement) {
		return
	}
	// A50, Ejection and Un-ejection.
	ep.ejectedAt = now
	ep.multiplier++
	for _, s := range b.sortedSubs() {
		if s.ep.Load() == ep {
			s.eject()
		}
	}
}

func (b *odBalancer) uneject(ep *endpoint) {
	ep.ejectedAt = time.Time{}
	for _, s := range b.sortedSubs() {
		if s.ep.Load() == ep {
			s.uneject()
		}
	}
}

// relink points s at its address's current endpoint and brings its health
// in line with that endpoint's ejection. A subchannel with several
// addresses, or an address in no endpoint, is not tracked (A50).
func (b *odBalancer) relink(s *subConn) {
	var ep *endpoint
	if s.addr != "" {
		ep = b.byAddr[s.addr]
	}
	s.ep.Store(ep)
	switch ejected := ep != nil && ep.ejected(); {
	case ejected && !s.ejected:
		s.eject()
	case !ejected && s.ejected:
		s.uneject()
	}
}

func (b *odBalancer) sortedSubs() []*subConn {
	out := make([]*subConn, 0, len(b.subs))
	for s := range b.subs {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y *subConn) int { return int(x.seq - y.seq) })
	return out
}

// childUpdate records the child's state and reports it with a counting
// picker.
func (b *odBalancer) childUpdate(s balancer.State) {
	if b.closed {
		return
	}
	b.childState, b.childReported = s, true
	b.report()
}

func (b *odBalancer) report() {
	b.cc.UpdateState(balancer.State{
		ConnectivityState: b.childState.ConnectivityState,
		Picker:            &picker{child: b.childState.Picker, count: !b.cfg.noop()},
	})
}

// childCC is the ClientConn the child is built with: it wraps the
// subchannels the child creates, routes the child's reports through the
// serializer, and forwards the clock.
type childCC struct {
	balancer.ClientConn
	b *odBalancer
}

var _ clock.Provider = (*childCC)(nil)

func (cc *childCC) Clock() clock.Clock { return cc.b.clk }

func (cc *childCC) UpdateState(s balancer.State) {
	cc.b.ser.Run(func() { cc.b.childUpdate(s) })
}

func (cc *childCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	return cc.b.newSubConn(addrs, opts)
}

func (cc *childCC) RemoveSubConn(sc balancer.SubConn) { sc.Shutdown() }

func (cc *childCC) UpdateAddresses(sc balancer.SubConn, addrs []resolver.Address) {
	sc.UpdateAddresses(addrs)
}

// newSubConn creates the channel's subchannel and hands the child a
// wrapper (A50, Subchannel Wrapper). The wrapper joins the subchannel map
// in the serializer, before any state of it can be delivered.
func (b *odBalancer) newSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	s := &subConn{b: b, listener: opts.StateListener, state: connectivity.Idle}
	if len(addrs) == 1 {
		s.addr = addrs[0].Addr
	}
	opts.StateListener = func(st balancer.SubConnState) {
		b.ser.Run(func() { s.onState(st) })
	}
	sc, err := b.cc.NewSubConn(addrs, opts)
	if err != nil {
		return nil, err
	}
	s.SubConn = sc
	b.ser.Run(func() {
		if b.closed {
			return
		}
		b.seq++
		s.seq = b.seq
		b.subs[s] = true
		b.relink(s)
	})
	return s, nil
}

// ejectedState is what an ejected endpoint's subchannels report to their
// health listeners.
var ejectedState = balancer.SubConnState{ConnectivityState: connectivity.TransientFailure, ConnectionError: errEjected}

// forget drops a wrapper whose subchannel was shut down.
func (b *odBalancer) forget(s *subConn) { delete(b.subs, s) }
