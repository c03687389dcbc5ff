// Package acmepickfirst is a deliberately naive pick_first, the worked
// example of judging your own Go balancer with conform
// (docs/own-balancer.md): it registers the LB policy acme_pick_first, which
// tries the resolver's addresses strictly one after the other, one
// subchannel at a time, with no Happy Eyeballs (gRFC A61) and no
// interleaving of address families. Everything else a pick_first does it
// does plainly: sticky TRANSIENT_FAILURE, re-resolution when a pass over
// the addresses has failed, a new pass when the subchannel's backoff ends.
//
// Link it into a program with a blank import and name it in a service
// config: {"loadBalancingConfig":[{"acme_pick_first":{}}]}.
package acmepickfirst

import (
	"errors"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

// Name is the policy's name in service configs.
const Name = "acme_pick_first"

func init() { balancer.Register(builder{}) }

type builder struct{}

func (builder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &acme{cc: cc, state: connectivity.Idle}
}

func (builder) Name() string { return Name }

// acme is one channel's policy. grpc-go calls its methods, and the
// subchannels' state listeners, one at a time.
type acme struct {
	cc    balancer.ClientConn
	addrs []resolver.Address
	next  int              // the index in addrs of sc's address
	sc    balancer.SubConn // the one subchannel; nil before the first address
	state connectivity.State
}

var errNoAddresses = errors.New("acme_pick_first: the resolver returned no addresses")

// UpdateClientConnState takes a new address list: a connection to an
// address still in it is kept, else a pass starts from the first address.
func (b *acme) UpdateClientConnState(s balancer.ClientConnState) error {
	addrs := flatten(s.ResolverState)
	if len(addrs) == 0 {
		b.ResolverError(errNoAddresses)
		return balancer.ErrBadResolverState
	}
	current := b.current()
	b.addrs = addrs
	if b.state == connectivity.Ready {
		for i, a := range addrs {
			if a.Addr == current.Addr {
				b.next = i
				return nil
			}
		}
	}
	b.connect(0)
	return nil
}

// flatten is every address of every endpoint, in the resolver's order.
func flatten(st resolver.State) []resolver.Address {
	if len(st.Endpoints) == 0 {
		return st.Addresses
	}
	var out []resolver.Address
	for _, ep := range st.Endpoints {
		out = append(out, ep.Addresses...)
	}
	return out
}

func (b *acme) current() resolver.Address {
	if b.sc == nil || b.next >= len(b.addrs) {
		return resolver.Address{}
	}
	return b.addrs[b.next]
}

// connect replaces the subchannel with one to addrs[i] and connects it.
func (b *acme) connect(i int) {
	if b.sc != nil {
		b.sc.Shutdown()
	}
	b.next = i
	var sc balancer.SubConn
	sc, err := b.cc.NewSubConn([]resolver.Address{b.addrs[i]}, balancer.NewSubConnOptions{
		StateListener: func(st balancer.SubConnState) { b.subConnState(sc, st) },
	})
	if err != nil {
		b.sc = nil
		b.report(connectivity.TransientFailure, errPicker{err})
		return
	}
	b.sc = sc
	sc.Connect()
	if b.state != connectivity.TransientFailure { // sticky TRANSIENT_FAILURE
		b.report(connectivity.Connecting, errPicker{balancer.ErrNoSubConnAvailable})
	}
}

// subConnState follows the current subchannel: READY is the channel's,
// a failure moves to the next address, and after the last one the pass
// has failed.
func (b *acme) subConnState(sc balancer.SubConn, st balancer.SubConnState) {
	if sc != b.sc {
		return // a subchannel replaced by a later one
	}
	switch st.ConnectivityState {
	case connectivity.Ready:
		b.report(connectivity.Ready, readyPicker{sc})
	case connectivity.TransientFailure:
		if b.next+1 < len(b.addrs) {
			b.connect(b.next + 1)
			return
		}
		b.report(connectivity.TransientFailure, errPicker{st.ConnectionError})
		b.cc.ResolveNow(resolver.ResolveNowOptions{})
	case connectivity.Idle:
		if b.state == connectivity.TransientFailure {
			b.connect(0) // the backoff is over: a new pass
			return
		}
		// The connection was lost: wait for an RPC, and ask for fresh
		// addresses meanwhile.
		b.report(connectivity.Idle, &idlePicker{sc: sc})
		b.cc.ResolveNow(resolver.ResolveNowOptions{})
	}
}

func (b *acme) report(s connectivity.State, p balancer.Picker) {
	b.state = s
	b.cc.UpdateState(balancer.State{ConnectivityState: s, Picker: p})
}

// ResolverError fails RPCs only while there is nothing better.
func (b *acme) ResolverError(err error) {
	if b.sc == nil || b.state == connectivity.TransientFailure {
		b.report(connectivity.TransientFailure, errPicker{err})
	}
}

// UpdateSubConnState is not used: every subchannel has a state listener.
func (b *acme) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle reconnects the subchannel, or starts a pass.
func (b *acme) ExitIdle() {
	switch {
	case b.sc != nil:
		b.sc.Connect()
	case len(b.addrs) > 0:
		b.connect(0)
	}
}

func (b *acme) Close() {
	if b.sc != nil {
		b.sc.Shutdown()
		b.sc = nil
	}
}

// readyPicker sends every RPC to the connected subchannel.
type readyPicker struct{ sc balancer.SubConn }

func (p readyPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{SubConn: p.sc}, nil
}

// errPicker fails or queues every RPC with err.
type errPicker struct{ err error }

func (p errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}

// idlePicker reconnects the idle subchannel on the first RPC and queues
// the RPCs until a new picker comes.
type idlePicker struct{ sc balancer.SubConn }

func (p *idlePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	p.sc.Connect()
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}
