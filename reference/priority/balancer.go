// Package priority is conform's reference implementation of gRFC A56's
// priority policy (priority_experimental), registered as "conform_priority".
//
// The config is A56's PriorityLoadBalancingPolicyConfig in JSON, with two
// extensions. "revision": "seed" (the default) follows A56 as first
// written, "latest" follows A56 as revised by A115. Every difference between
// the two is in child.go under "Where the revisions of A56 differ", except
// A115's removal of dropped children, in applyConfig. "childPolicyCache":
// true is A115's revert switch, which keeps dropped children with the latest
// revision; the policy never reads the environment variable, a harness or a
// driver sets it with WithChildPolicyCache.
//
// Time is read only through clock.From(cc): the failover and deactivation
// timers run on virtual time in the simulator and on wall time in a channel.
package priority

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/hierarchy"
	"github.com/conformlab/conform/reference/internal/serial"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
)

// Name is the policy's name in the grpc-go balancer registry.
const Name = "conform_priority"

func init() { balancer.Register(builder{}) }

type builder struct{}

var (
	_ balancer.Builder      = builder{}
	_ balancer.ConfigParser = builder{}
	_ clock.Aware           = builder{}
)

func (builder) Name() string { return Name }

// OnClockSeam marks the policy as reading time only through harness/clock.
func (builder) OnClockSeam() {}

func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return parseConfig(js)
}

func (builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &priorityBalancer{
		cc:       cc,
		opts:     opts,
		clk:      clock.From(cc),
		children: make(map[string]*child),
	}
}

// priorityBalancer is the policy.
//
// Concurrency. The channel serializes its calls into the policy, but timers
// fire on their own goroutines on wall time, and a child may report from its
// own timers' goroutines too. Every event therefore runs through b.ser
// (serial.Queue): one goroutine at a time drains a queue of work, and the
// fields below "owned by the serializer" are touched only by that work.
// Locks: b.mu guards reactionQueued; each child's mu guards that child's
// pending reports. Neither is held while the other is taken, nor while
// calling a child or the channel, nor while b.ser runs work, so there is no
// lock order to keep.
//
// A child's report is recorded under its own lock at once and taken in by
// the serializer (child.absorb) either right after the call into the child
// that caused it returns, or by a queued reaction. That is what lets the
// priority choice read a new child's state right after creating it, as A56's
// ChoosePriority does, and lets a config update choose once for all
// children (A56, Configuration Updates).
type priorityBalancer struct {
	cc   balancer.ClientConn
	opts balancer.BuildOptions
	clk  clock.Clock

	ser serial.Queue // runs every event, one at a time

	mu             sync.Mutex // guards reactionQueued; a leaf lock
	reactionQueued bool

	// Owned by the serializer.
	cfg      *lbConfig
	rstate   resolver.State
	split    map[string]resolver.State
	children map[string]*child // created children, active or deactivated
	updating bool              // applying an update from the parent
	current  string            // child whose picker was last reported
	reported balancer.State    // what was last sent to the channel
	closed   bool
}

// queueReaction queues, once, the processing of child reports.
func (b *priorityBalancer) queueReaction() {
	b.mu.Lock()
	if b.reactionQueued {
		b.mu.Unlock()
		return
	}
	b.reactionQueued = true
	b.mu.Unlock()
	b.ser.Run(b.react)
}

// react takes in every child's pending reports and, if there were any,
// re-runs the choice (A56, Algorithm for Choosing a Priority: run when
// processing a child connectivity state update).
func (b *priorityBalancer) react() {
	b.mu.Lock()
	b.reactionQueued = false
	b.mu.Unlock()
	if b.closed {
		return
	}
	changed := false
	for _, name := range b.childNames() {
		if b.children[name].absorb() {
			changed = true
		}
	}
	if changed && !b.updating {
		b.choosePriority()
	}
}

func (b *priorityBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*lbConfig)
	if !ok {
		return fmt.Errorf("%s: config of type %T, want %T", Name, s.BalancerConfig, (*lbConfig)(nil))
	}
	b.ser.Run(func() {
		if !b.closed {
			b.applyConfig(cfg, s.ResolverState)
		}
	})
	return nil
}

// applyConfig is A56, Configuration Updates: every existing child is
// updated or, when it left the config, deactivated (seed) or removed at once
// (latest, A115); children are not created here (lazy creation). The choice
// is made once, after all children are updated (batching).
func (b *priorityBalancer) applyConfig(cfg *lbConfig, s resolver.State) {
	b.cfg, b.rstate, b.split = cfg, s, hierarchy.Split(s)
	b.updating = true
	for _, name := range b.childNames() {
		c := b.children[name]
		ncfg, ok := cfg.children[name]
		switch {
		case !ok && cfg.revision == revisionLatest && !cfg.childPolicyCache:
			// A115: no child policy cache for a child removed from the
			// config; it goes at once. (A115, Temporary environment
			// variable protection: the revert switch keeps the cache.)
			b.removeChild(c)
		case !ok:
			// A56, Child Lifetime Management: the same deactivation timer
			// as for lower priorities; re-adding the child by name updates
			// it but does not reactivate it unless it is chosen.
			c.deactivate()
		case ncfg.policy != c.cfg.policy:
			// Another policy under the same name: switched gracefully
			// (L9, Swapping out balancer), as grpc-go's and Java's
			// priority hand a child's config to a graceful switch; A56
			// names children so that they are updated, not recreated.
			c.switchPolicy(ncfg)
		default:
			c.update(ncfg)
		}
	}
	b.updating = false
	b.choosePriority()
}

func (b *priorityBalancer) ResolverError(err error) {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		if b.cfg == nil {
			b.report(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{err}})
			return
		}
		// An update from the parent too: batched like a config update.
		b.updating = true
		for _, name := range b.childNames() {
			c := b.children[name]
			c.bal.ResolverError(err)
			c.absorb()
		}
		b.updating = false
		b.choosePriority()
	})
}

// UpdateSubConnState is not used: children create their subchannels with a
// StateListener, which the channel calls directly.
func (b *priorityBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle is forwarded to the child whose picker is in use.
func (b *priorityBalancer) ExitIdle() {
	b.ser.Run(func() {
		if c, ok := b.children[b.current]; ok && !b.closed {
			c.bal.ExitIdle()
			if c.absorb() {
				b.choosePriority()
			}
		}
	})
}

func (b *priorityBalancer) Close() {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		b.closed = true
		for _, name := range b.childNames() {
			b.removeChild(b.children[name])
		}
	})
}

// childNames returns the created children's names in a fixed order, so that
// runs (timer ids in traces, among others) are repeatable.
func (b *priorityBalancer) childNames() []string {
	names := make([]string, 0, len(b.children))
	for n := range b.children {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// childResolverState is the part of the resolver state for child name.
func (b *priorityBalancer) childResolverState(name string) resolver.State {
	return hierarchy.ForChild(b.split, name, b.rstate)
}

func (b *priorityBalancer) removeChild(c *child) {
	c.close()
	delete(b.children, c.name)
	if b.current == c.name {
		b.current = ""
	}
}

// errEmptyPriorities is the status of the TRANSIENT_FAILURE reported for an
// empty priorities list (A56, Algorithm for Choosing a Priority).
var errEmptyPriorities = errors.New(Name + ": the config lists no priorities, so there is no child to route to")

// choosePriority is A56's ChoosePriority, in the order the document writes
// it. It is idempotent: run twice on the same children's states it reports
// the same child.
func (b *priorityBalancer) choosePriority() {
	if b.cfg == nil || b.closed {
		return
	}
	prios := b.cfg.priorities
	if len(prios) == 0 {
		b.current = ""
		b.report(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{errEmptyPriorities}})
		return
	}
	// First pass: the first child READY or IDLE, or whose failover timer is
	// pending, creating children as needed (lazily: none below the one
	// chosen).
	for p, name := range prios {
		c, ok := b.children[name]
		if !ok {
			c = b.newChild(name, b.cfg.children[name])
			b.children[name] = c
		} else {
			c.maybeReactivate()
		}
		switch st := c.state.ConnectivityState; {
		case st == connectivity.Ready || st == connectivity.Idle:
			b.setCurrentPriority(p, true)
			return
		case c.failoverTimerPending():
			b.setCurrentPriority(p, false)
			return
		}
	}
	// Second pass: the first child in CONNECTING.
	for p, name := range prios {
		if b.children[name].state.ConnectivityState == connectivity.Connecting {
			b.setCurrentPriority(p, false)
			return
		}
	}
	// None: delegate to the last child.
	b.setCurrentPriority(len(prios)-1, false)
}

// setCurrentPriority is A56's SetCurrentPriority: deactivate the created
// children below priority p if asked, and report child p's state and picker.
func (b *priorityBalancer) setCurrentPriority(p int, deactivateLower bool) {
	prios := b.cfg.priorities
	if deactivateLower {
		for _, name := range prios[p+1:] {
			if c, ok := b.children[name]; ok {
				c.deactivate()
			}
		}
	}
	c := b.children[prios[p]]
	b.current = c.name
	b.report(c.state)
}

// report sends s to the channel unless it is exactly what was sent last
// (same state, same picker): A56's algorithm reports on every run, and a
// repeat of an identical picker changes nothing for the channel.
func (b *priorityBalancer) report(s balancer.State) {
	if s.ConnectivityState == b.reported.ConnectivityState && samePicker(s.Picker, b.reported.Picker) {
		return
	}
	b.reported = s
	b.cc.UpdateState(s)
}

// samePicker reports whether a and b are the same picker value. Pickers of
// types that cannot be compared are never the same.
func samePicker(a, b balancer.Picker) bool {
	if a == nil || b == nil {
		return false
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}
