package outlierdetection

import (
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

// subConn is A50's subchannel wrapper with A61's change: it ejects through
// the generic health reporting mechanism. Raw connectivity states pass
// through untouched (pick_first's connection management keeps using them);
// while the subchannel's endpoint is ejected, the health listener the child
// registered sees TRANSIENT_FAILURE instead of the subchannel's health.
//
// Fields other than ep are touched only from functions run by b.ser.
type subConn struct {
	balancer.SubConn // the channel's
	b                *odBalancer
	seq              uint64
	// addr is the subchannel's address; "" when it has several (A50: such
	// a subchannel is not tracked).
	addr string
	// ep is the endpoint map entry the picker counts calls against; nil
	// when the address is in no endpoint. Pickers read it concurrently.
	ep atomic.Pointer[endpoint]

	listener func(balancer.SubConnState) // the child's StateListener
	state    connectivity.State          // raw, last delivered

	// health is the child's health listener; healthGen tells current
	// health updates from those of a replaced registration.
	health    func(balancer.SubConnState)
	healthGen uint64
	// lastHealth is the latest health update of the current registration.
	lastHealth *balancer.SubConnState
	// ejected: the health listener was told TRANSIENT_FAILURE for an
	// ejection, and is told nothing else until un-ejection.
	ejected bool
}

var _ balancer.SubConn = (*subConn)(nil)

// onState passes a raw state change to the child. Leaving READY ends the
// health watch, as in the channel: the child registers again when it is
// READY again.
func (s *subConn) onState(st balancer.SubConnState) {
	s.state = st.ConnectivityState
	if s.state != connectivity.Ready {
		s.health, s.lastHealth = nil, nil
		s.healthGen++
	}
	if s.state == connectivity.Shutdown {
		s.b.forget(s)
	}
	if s.listener != nil {
		s.listener(st)
	}
}

// RegisterHealthListener starts the child's health watch (A61, Generic
// Health Reporting Mechanism) through the channel's, filtered by ejection:
// registered while the endpoint is ejected, the listener hears
// TRANSIENT_FAILURE at once.
func (s *subConn) RegisterHealthListener(l func(balancer.SubConnState)) {
	s.b.ser.Run(func() {
		s.healthGen++
		gen := s.healthGen
		s.health, s.lastHealth = l, nil
		if l == nil {
			s.SubConn.RegisterHealthListener(nil)
			return
		}
		s.SubConn.RegisterHealthListener(func(st balancer.SubConnState) {
			s.b.ser.Run(func() { s.onHealth(gen, st) })
		})
		if ep := s.ep.Load(); ep != nil && ep.ejected() {
			s.ejected = false
			s.eject()
		}
	})
}

func (s *subConn) onHealth(gen uint64, st balancer.SubConnState) {
	if s.b.closed || gen != s.healthGen || s.health == nil {
		return
	}
	s.lastHealth = &st
	if s.ejected {
		return
	}
	s.health(st)
}

// eject is A50's eject(), on the health watch.
func (s *subConn) eject() {
	if s.ejected {
		return
	}
	s.ejected = true
	if s.health != nil {
		s.health(ejectedState)
	}
}

// uneject is A50's uneject(): the health listener hears the latest health
// update again (if there was one; else the next one).
func (s *subConn) uneject() {
	if !s.ejected {
		return
	}
	s.ejected = false
	if s.health != nil && s.lastHealth != nil {
		s.health(*s.lastHealth)
	}
}

// Shutdown shuts the channel's subchannel down; its SHUTDOWN state reaches
// the child through the listener.
func (s *subConn) Shutdown() { s.SubConn.Shutdown() }

// UpdateAddresses forwards the new list and re-links the wrapper to the
// endpoint of its new address (A50, Update Addresses, with the map keyed
// by endpoint: a subchannel with several addresses is not tracked).
func (s *subConn) UpdateAddresses(addrs []resolver.Address) {
	s.SubConn.UpdateAddresses(addrs)
	s.b.ser.Run(func() {
		s.addr = ""
		if len(addrs) == 1 {
			s.addr = addrs[0].Addr
		}
		if s.b.subs[s] {
			s.b.relink(s)
		}
	})
}

// String names the wrapped subchannel.
func (s *subConn) String() string {
	if str, ok := s.SubConn.(interface{ String() string }); ok {
		return str.String()
	}
	return s.addr
}
