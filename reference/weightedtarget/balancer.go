// Package weightedtarget is conform's reference implementation of gRFC A28's
// weighted target policy (weighted_target_experimental), registered as
// "conform_weighted_target".
//
// Config (A28, Weighted target LB policy): {"targets": {"name": {"weight":
// n, "child_policy": [{policy: config}]}}}. Every target gets a child policy,
// fed the endpoints whose hierarchical path starts with the target's name
// (A56, Hierarchical Addresses). The policy's state aggregates its
// children's; picks go to the children in that state, chosen at random in
// proportion to their weights through clock.Rand().
package weightedtarget

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/hierarchy"
	"github.com/conformlab/conform/reference/internal/serial"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/serviceconfig"
)

// Name is the policy's name in the grpc-go balancer registry.
const Name = "conform_weighted_target"

func init() { balancer.Register(builder{}) }

type builder struct{}

var (
	_ balancer.Builder      = builder{}
	_ balancer.ConfigParser = builder{}
	_ clock.Aware           = builder{}
)

func (builder) Name() string { return Name }

// OnClockSeam marks the policy as reading time and randomness only through
// harness/clock.
func (builder) OnClockSeam() {}

func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return parseConfig(js)
}

func (builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &wtBalancer{cc: cc, opts: opts, clk: clock.From(cc), children: make(map[string]*child)}
}

// wtBalancer is the policy.
//
// Concurrency: as in conform_priority, every event (channel call, child
// report, timer) runs through b.ser (serial.Queue), one goroutine at a
// time; b.mu guards reactionQueued and each child's mu its pending reports.
// No lock is held while another is taken, while a child or the channel is
// called, or while b.ser runs work.
type wtBalancer struct {
	cc   balancer.ClientConn
	opts balancer.BuildOptions
	clk  clock.Clock

	ser serial.Queue // runs every event, one at a time

	mu             sync.Mutex // guards reactionQueued; a leaf lock
	reactionQueued bool

	// Owned by the serializer.
	cfg      *lbConfig
	children map[string]*child // configured targets and cached removed ones
	closed   bool
}

func (b *wtBalancer) queueReaction() {
	b.mu.Lock()
	if b.reactionQueued {
		b.mu.Unlock()
		return
	}
	b.reactionQueued = true
	b.mu.Unlock()
	b.ser.Run(func() {
		b.mu.Lock()
		b.reactionQueued = false
		b.mu.Unlock()
		if !b.closed && b.absorbAll() {
			b.reportAggregate()
		}
	})
}

func (b *wtBalancer) absorbAll() bool {
	changed := false
	for _, name := range b.childNames() {
		if b.children[name].absorb() {
			changed = true
		}
	}
	return changed
}

func (b *wtBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*lbConfig)
	if !ok {
		return fmt.Errorf("%s: config of type %T, want %T", Name, s.BalancerConfig, (*lbConfig)(nil))
	}
	b.ser.Run(func() {
		if b.closed {
			return
		}
		b.cfg = cfg
		split := hierarchy.Split(s.ResolverState)
		// Targets that left the config are cached (A28).
		for _, name := range b.childNames() {
			if _, ok := cfg.targets[name]; !ok {
				b.children[name].startCache()
			}
		}
		for _, name := range sortedKeys(cfg.targets) {
			t := cfg.targets[name]
			c, ok := b.children[name]
			if ok && c.tgt.policy != t.policy {
				b.removeChild(c)
				ok = false
			}
			if !ok {
				c = b.newChild(name, t)
				b.children[name] = c
			}
			c.stopCache()
			c.tgt = t
			cs := hierarchy.ForChild(split, name, s.ResolverState)
			_ = c.bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: cs, BalancerConfig: t.config})
		}
		// One report for the whole update, after every child has had it.
		b.absorbAll()
		b.reportAggregate()
	})
	return nil
}

func (b *wtBalancer) ResolverError(err error) {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		if b.cfg == nil {
			b.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{err}})
			return
		}
		for _, name := range b.childNames() {
			if c := b.children[name]; !c.cached() {
				c.bal.ResolverError(err)
			}
		}
		b.absorbAll()
		b.reportAggregate()
	})
}

// UpdateSubConnState is not used: children create their subchannels with a
// StateListener, which the channel calls directly.
func (b *wtBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle is forwarded to every configured child.
func (b *wtBalancer) ExitIdle() {
	b.ser.Run(func() {
		if b.closed {
			return
		}
		for _, name := range b.childNames() {
			if c := b.children[name]; !c.cached() {
				c.bal.ExitIdle()
			}
		}
	})
}

func (b *wtBalancer) Close() {
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

func (b *wtBalancer) removeChild(c *child) {
	c.close()
	delete(b.children, c.name)
}

func (b *wtBalancer) childNames() []string {
	return sortedKeys(b.children)
}

func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var errNoTargets = errors.New(Name + ": the config has no targets")

// aggregate is the state of the policy given its configured children's
// states (A28: "the aggregated state of all child policies"): READY if one
// is READY, else CONNECTING if one is, else IDLE if one is, else
// TRANSIENT_FAILURE.
func aggregate(states []connectivity.State) connectivity.State {
	has := map[connectivity.State]bool{}
	for _, s := range states {
		has[s] = true
	}
	for _, s := range []connectivity.State{connectivity.Ready, connectivity.Connecting, connectivity.Idle} {
		if has[s] {
			return s
		}
	}
	return connectivity.TransientFailure
}

// reportAggregate sends the aggregated state with a picker over the children
// in that state, weighted (A28: picks go to the READY children by weight).
func (b *wtBalancer) reportAggregate() {
	var live []*child
	var states []connectivity.State
	for _, name := range b.childNames() {
		if c := b.children[name]; !c.cached() {
			live = append(live, c)
			states = append(states, c.state.ConnectivityState)
		}
	}
	if len(live) == 0 {
		b.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{errNoTargets}})
		return
	}
	agg := aggregate(states)
	var weights []uint32
	var pickers []balancer.Picker
	for _, c := range live {
		if c.state.ConnectivityState == agg {
			weights = append(weights, c.tgt.weight)
			pickers = append(pickers, c.state.Picker)
		}
	}
	b.cc.UpdateState(balancer.State{ConnectivityState: agg, Picker: newWeightedPicker(b.clk.Rand(), weights, pickers)})
}
