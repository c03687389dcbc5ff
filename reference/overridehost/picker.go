package overridehost

import (
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
)

// picker is A75's xds_override_host picker (Changes in xds_override_host
// LB Policy, pseudo-code), reading the session from request metadata
// (SessionHeader).
type picker struct {
	b        *ohBalancer
	child    balancer.Picker
	statuses map[string]bool
	// queued: this picker queued a session's RPC waiting for a
	// subchannel; the policy then replaces it on the next subchannel
	// state change. Set under b.mu's read lock, so that a state change
	// made under the write lock either is seen by the pick or sees the
	// flag.
	queued atomic.Bool
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	md, _ := metadata.FromOutgoingContext(info.Ctx)
	inSession, cookie := sessionOf(md)
	if inSession {
		b := p.b
		var idle *subchannel
		var noSub string
		connecting := false
		b.mu.RLock()
		for _, addr := range cookie {
			e := b.entries[addr]
			if e == nil || !p.statuses[e.health] {
				continue
			}
			if s := e.sub; s != nil {
				switch s.state {
				case connectivity.Ready:
					e.lastUsed.Store(b.clk.Now().UnixNano())
					res := balancer.PickResult{SubConn: s.sc, Metadata: metadata.Pairs(ActualAddressesHeader, e.addrList)}
					b.mu.RUnlock()
					return res, nil
				case connectivity.Idle:
					if idle == nil {
						idle = s
					}
				case connectivity.Connecting:
					connecting = true
				}
			} else if noSub == "" {
				noSub = addr
			}
		}
		if idle != nil || connecting || noSub != "" {
			p.queued.Store(true)
		}
		b.mu.RUnlock()
		switch {
		case idle != nil:
			// Trigger a connection attempt and queue the pick until it
			// completes.
			b.ser.Run(func() { b.connect(idle) })
			return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
		case connecting:
			return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
		case noSub != "":
			// A75: no READY, IDLE or CONNECTING subchannel, but an entry
			// without one: create it and queue.
			b.ser.Run(func() { b.createFor(noSub) })
			return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
		}
	}
	if p.child == nil {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	res, err := p.child.Pick(info)
	if err != nil {
		return res, err
	}
	cs, ok := res.SubConn.(*childSub)
	if !ok {
		return res, nil
	}
	res.SubConn = cs.SubConn
	if inSession {
		p.b.mu.RLock()
		if e := p.b.entries[cs.s.addr]; e != nil && cs.s.addr != "" {
			e.lastUsed.Store(p.b.clk.Now().UnixNano())
			md := res.Metadata.Copy()
			if md == nil {
				md = metadata.MD{}
			}
			md.Set(ActualAddressesHeader, e.addrList)
			res.Metadata = md
		}
		p.b.mu.RUnlock()
	}
	return res, nil
}
