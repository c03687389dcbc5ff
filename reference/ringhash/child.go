package ringhash

import "google.golang.org/grpc/balancer"

// lazyBuilder builds each endpoint's child. A61, Ring Hash: ring_hash
// connects lazily but pick_first connects as soon as it gets its address
// list, so ring_hash creates the pick_first child only when it wants to
// connect. The lazy child stands in until then: it keeps the latest update
// and reports nothing, so its parent sees it IDLE (endpoints.Child's state
// before a first report), and it builds the real child on ExitIdle.
type lazyBuilder struct{ child balancer.Builder }

func (b lazyBuilder) Build(cc balancer.ClientConn, bopts balancer.BuildOptions) balancer.Balancer {
	return &lazyChild{builder: b.child, cc: cc, bopts: bopts}
}

func (b lazyBuilder) Name() string { return "lazy " + b.child.Name() }

// lazyChild is serialized by its parent (endpoints.Balancer runs every call
// into it, ExitIdle from a picker included, on one serializer).
type lazyChild struct {
	builder balancer.Builder
	cc      balancer.ClientConn // forwards the parent's clock
	bopts   balancer.BuildOptions

	last   balancer.ClientConnState
	child  balancer.Balancer // nil until ExitIdle
	closed bool
}

func (l *lazyChild) UpdateClientConnState(s balancer.ClientConnState) error {
	l.last = s
	if l.child != nil {
		return l.child.UpdateClientConnState(s)
	}
	return nil
}

func (l *lazyChild) ResolverError(err error) {
	if l.child != nil {
		l.child.ResolverError(err)
	}
}

func (l *lazyChild) UpdateSubConnState(sc balancer.SubConn, s balancer.SubConnState) {
	if l.child != nil {
		l.child.UpdateSubConnState(sc, s)
	}
}

// ExitIdle creates the child with the latest update (it starts connecting
// at once), or passes ExitIdle to the child already created.
func (l *lazyChild) ExitIdle() {
	if l.closed {
		return
	}
	if l.child == nil {
		l.child = l.builder.Build(l.cc, l.bopts)
		l.child.UpdateClientConnState(l.last)
		return
	}
	l.child.ExitIdle()
}

func (l *lazyChild) Close() {
	l.closed = true
	if l.child != nil {
		l.child.Close()
	}
}
