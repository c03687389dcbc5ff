// Package ringhash is conform's reference ring_hash: the policy of gRFC A42
// with the changes of gRFC A61 (Ring Hash): a petiole over one
// conform_pick_first child per endpoint, created lazily, generic health
// reporting on, each endpoint placed on the ring by the hash of its first
// address. Registered as conform_ring_hash.
//
// The request hash is XXH64 of a configurable request header
// (requestHashHeader), conform's way to drive picks from a scenario's RPC
// metadata; a request without it gets a random hash from the clock seam.
package ringhash

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/endpoints"
	"github.com/conformlab/conform/reference/pickfirst"
)

// Name is the name conform_ring_hash is registered under.
const Name = "conform_ring_hash"

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
	rh := &ringHash{cc: cc}
	rh.cfg.Store(defaultConfig())
	rh.eps = endpoints.New(cc, bopts, endpoints.Options{
		// A61, Ring Hash: the pick_first child is created only when
		// ring_hash wants to connect.
		Child: lazyBuilder{child: balancer.Get(pickfirst.Name)},
		// A61, Generic Health Reporting Mechanism: petioles turn it on in
		// their pick_first children.
		PrepareChild: pickfirst.EnableHealthReporting,
		// No AutoReconnect: A42, Subchannel State Handling: a child that
		// goes IDLE is connected again only by a pick or by the proactive
		// rule below.
		OnChange: rh.onChange,
	})
	return rh
}

func (builder) Name() string { return Name }

func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return parseConfig(js)
}

// OnClockSeam marks the policy as reading time only through harness/clock.
func (builder) OnClockSeam() {}

// ringHash is one conform_ring_hash instance. endpoints.Balancer keeps the
// children (one per endpoint, identified by the unordered set of its
// addresses, attributes ignored: A61, Ring Hash, de-duplication) and runs
// onChange serialized with everything else; the ring cache is touched only
// there. cfg is written by the channel's goroutine and read by onChange.
type ringHash struct {
	cc  balancer.ClientConn
	eps *endpoints.Balancer
	cfg atomic.Pointer[lbConfig]

	// The ring of the last report and what it was built from.
	ring       ring
	ringFrom   []*endpoints.Child
	ringKeys   []ringMember
	ringConfig lbConfig
}

var _ balancer.Balancer = (*ringHash)(nil)

// UpdateClientConnState takes the config and passes the endpoints on; an
// update without addresses is refused with balancer.ErrBadResolverState.
func (rh *ringHash) UpdateClientConnState(s balancer.ClientConnState) error {
	if s.BalancerConfig != nil {
		cfg, ok := s.BalancerConfig.(*lbConfig)
		if !ok {
			return fmt.Errorf("%s: config of type %T, want its own: %w", Name, s.BalancerConfig, balancer.ErrBadResolverState)
		}
		rh.cfg.Store(cfg)
	}
	return rh.eps.UpdateClientConnState(s)
}

func (rh *ringHash) ResolverError(err error) { rh.eps.ResolverError(err) }

// UpdateSubConnState is not used: children's SubConns have listeners.
func (rh *ringHash) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle does nothing: ring_hash connects only for picks and by the
// proactive rule (A42, Subchannel State Handling; A61, Ring Hash).
func (rh *ringHash) ExitIdle() {}

func (rh *ringHash) Close() { rh.eps.Close() }

// onChange runs after a resolver update or a child's state change. On
// return the channel has a new picker over the current ring and the
// children's current states, and, if the aggregate is CONNECTING or
// TRANSIENT_FAILURE with no child CONNECTING, one IDLE child has been asked
// to connect (A61, Ring Hash).
func (rh *ringHash) onChange(v endpoints.View) {
	if len(v.Children) == 0 {
		err := fmt.Errorf("%s: the resolver produced no endpoints", Name)
		if v.ResolverErr != nil {
			err = fmt.Errorf("%s: no endpoints; resolver error: %v", Name, v.ResolverErr)
		}
		rh.ring, rh.ringFrom, rh.ringKeys = nil, nil, nil
		rh.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{err}})
		return
	}
	cfg := rh.cfg.Load()
	rh.updateRing(v.Children, cfg)

	states := make([]connectivity.State, len(v.Children))
	members := make([]memberState, len(v.Children))
	for i, c := range v.Children {
		states[i] = c.State.ConnectivityState
		members[i] = memberState{state: states[i], picker: c.State.Picker, exitIdle: c.ExitIdle}
	}
	agg := aggregate(states)
	rh.cc.UpdateState(balancer.State{
		ConnectivityState: agg,
		Picker:            newPicker(rh.ring, members, cfg.RequestHashHeader, rh.eps.Clock().Rand()),
	})

	// A61, Ring Hash: while the aggregate is CONNECTING or
	// TRANSIENT_FAILURE and no endpoint is CONNECTING, ask one IDLE
	// endpoint to connect, even without picks, so that a parent (priority)
	// that sends no picks still sees ring_hash recover. Which one is left to
	// the implementation: the first IDLE in resolver order. The child's
	// ExitIdle runs after this function returns.
	if agg != connectivity.Connecting && agg != connectivity.TransientFailure {
		return
	}
	if slices.Contains(states, connectivity.Connecting) {
		return
	}
	if i := slices.Index(states, connectivity.Idle); i >= 0 {
		v.Children[i].ExitIdle()
	}
}

// updateRing rebuilds the ring when the children, their first addresses,
// their weights or the ring sizes changed (A42: a new ring whenever the
// address list changes).
func (rh *ringHash) updateRing(children []*endpoints.Child, cfg *lbConfig) {
	keys := make([]ringMember, len(children))
	for i, c := range children {
		// A61, Ring Hash: an endpoint is placed by its first address.
		keys[i] = ringMember{key: c.Endpoint.Addresses[0].Addr, weight: weightOf(c.Endpoint)}
	}
	if rh.ring != nil && slices.Equal(children, rh.ringFrom) && slices.Equal(keys, rh.ringKeys) &&
		cfg.MinRingSize == rh.ringConfig.MinRingSize && cfg.MaxRingSize == rh.ringConfig.MaxRingSize {
		return
	}
	rh.ring = newRing(keys, cfg.MinRingSize, cfg.MaxRingSize)
	rh.ringFrom, rh.ringKeys, rh.ringConfig = children, keys, *cfg
}

// aggregate is ring_hash's aggregated connectivity state, A42, Aggregated
// Connectivity State, rules 1 to 6 in order.
func aggregate(states []connectivity.State) connectivity.State {
	var n [connectivity.Shutdown + 1]int
	for _, s := range states {
		n[s]++
	}
	switch {
	case n[connectivity.Ready] > 0: // 1
		return connectivity.Ready
	case n[connectivity.TransientFailure] >= 2: // 2
		return connectivity.TransientFailure
	case n[connectivity.Connecting] > 0: // 3
		return connectivity.Connecting
	case n[connectivity.TransientFailure] == 1 && len(states) > 1: // 4
		return connectivity.Connecting
	case n[connectivity.Idle] > 0: // 5
		return connectivity.Idle
	default: // 6
		return connectivity.TransientFailure
	}
}
