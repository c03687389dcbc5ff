// Package roundrobin is conform's reference round_robin: a petiole policy
// (A61, Use pick_first as the Universal Leaf Policy) with one
// conform_pick_first child per endpoint, generic health reporting turned on,
// spreading RPCs over the endpoints whose child is READY. Registered as
// conform_round_robin.
package roundrobin

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/reference/internal/endpoints"
	"github.com/conformlab/conform/reference/pickfirst"
)

// Name is the name conform_round_robin is registered under.
const Name = "conform_round_robin"

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
	rr := &roundRobin{cc: cc}
	child := balancer.Get(pickfirst.Name)
	rr.Balancer = endpoints.New(cc, bopts, endpoints.Options{
		Child: child,
		// A61, Generic Health Reporting Mechanism: petioles turn it on in
		// their pick_first children.
		PrepareChild: pickfirst.EnableHealthReporting,
		// A58 (the round_robin rules WRR shares): a child that reports IDLE
		// is asked to connect at once and counts as CONNECTING meanwhile.
		AutoReconnect: true,
		OnChange:      rr.onChange,
	})
	return rr
}

func (builder) Name() string { return Name }

// lbConfig is round_robin's configuration, which has no fields.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`
}

// ParseConfig accepts any JSON object (round_robin has no fields; unknown
// ones are ignored) and rejects anything else.
func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	if len(js) == 0 {
		return &lbConfig{}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, fmt.Errorf("%s: invalid LB config %s: %v", Name, js, err)
	}
	return &lbConfig{}, nil
}

// OnClockSeam marks the policy as reading time only through harness/clock.
func (builder) OnClockSeam() {}

// roundRobin aggregates its children's states; endpoints.Balancer does the
// rest. onChange runs serialized by endpoints.Balancer.
type roundRobin struct {
	*endpoints.Balancer
	cc balancer.ClientConn

	state    connectivity.State
	reported bool
}

// onChange reports the aggregate state, by round_robin's rules (A58,
// Subchannel connectivity state notification, which restates them): READY
// if any child is READY; else CONNECTING if any is CONNECTING or IDLE (an
// IDLE child is being reconnected); else TRANSIENT_FAILURE.
func (rr *roundRobin) onChange(v endpoints.View) {
	var ready, connecting, failing []balancer.Picker
	for _, c := range v.Children {
		switch c.State.ConnectivityState {
		case connectivity.Ready:
			ready = append(ready, c.State.Picker)
		case connectivity.TransientFailure:
			failing = append(failing, c.State.Picker)
		default: // CONNECTING, IDLE, or no report yet
			connecting = append(connecting, c.State.Picker)
		}
	}
	rnd := rr.Clock().Rand()
	switch {
	case len(ready) > 0:
		rr.report(connectivity.Ready, newRotatingPicker(ready, rnd, nil))
	case len(connecting) > 0:
		rr.report(connectivity.Connecting, queuePicker{})
	case len(failing) > 0:
		// A61, Use pick_first as the Universal Leaf Policy: keep the
		// children's error messages, which name the address and reason.
		rr.report(connectivity.TransientFailure, newRotatingPicker(failing, rnd, func(err error) error {
			return fmt.Errorf("%s: all %d endpoints are in TRANSIENT_FAILURE; %w", Name, len(failing), err)
		}))
	default:
		err := fmt.Errorf("%s: the resolver produced no endpoints", Name)
		if v.ResolverErr != nil {
			err = fmt.Errorf("%s: no endpoints; resolver error: %v", Name, v.ResolverErr)
		}
		rr.report(connectivity.TransientFailure, errPicker{err})
	}
}

// report sends the aggregate to the channel; a repeated CONNECTING is not
// sent again (its picker would behave the same).
func (rr *roundRobin) report(s connectivity.State, p balancer.Picker) {
	if rr.reported && s == rr.state && s == connectivity.Connecting {
		return
	}
	rr.state, rr.reported = s, true
	rr.cc.UpdateState(balancer.State{ConnectivityState: s, Picker: p})
}
