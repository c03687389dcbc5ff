package endpoints

import (
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

// fakeChild reports CONNECTING from inside every update, as pick_first does.
type fakeChild struct {
	cc      balancer.ClientConn
	updates []resolver.State
	closed  bool
}

func (f *fakeChild) UpdateClientConnState(s balancer.ClientConnState) error {
	f.updates = append(f.updates, s.ResolverState)
	f.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Connecting})
	return nil
}
func (f *fakeChild) ResolverError(error)                                        {}
func (f *fakeChild) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (f *fakeChild) Close()                                                     { f.closed = true }
func (f *fakeChild) ExitIdle()                                                  {}

type fakeBuilder struct{ built []*fakeChild }

func (b *fakeBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	c := &fakeChild{cc: cc}
	b.built = append(b.built, c)
	return c
}
func (b *fakeBuilder) Name() string { return "fake" }

type nopCC struct{ balancer.ClientConn }

func eps(lists ...[]string) balancer.ClientConnState {
	var s resolver.State
	for _, l := range lists {
		var e resolver.Endpoint
		for _, a := range l {
			e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return balancer.ClientConnState{ResolverState: s}
}

// TestEndpoints_IdentityIsUnorderedAddressSet verifies A61, Address List
// Updates in Petiole Policies (Java/Go): reordered addresses keep the child
// and reach it in the new order; a changed set is a new child; a duplicate
// endpoint is used once; children's reports made during an update reach the
// owner as one OnChange.
func TestEndpoints_IdentityIsUnorderedAddressSet(t *testing.T) {
	fb := &fakeBuilder{}
	var views []View
	b := New(nopCC{}, balancer.BuildOptions{}, Options{Child: fb, OnChange: func(v View) { views = append(views, v) }})

	b.UpdateClientConnState(eps([]string{"a", "b"}, []string{"c"}, []string{"b", "a"}))
	if len(fb.built) != 2 || len(views) != 1 || len(views[0].Children) != 2 {
		t.Fatalf("built %d children, %d OnChange calls (%v); want 2 children, 1 call", len(fb.built), len(views), views)
	}
	for _, c := range views[0].Children {
		if c.State.ConnectivityState != connectivity.Connecting {
			t.Fatalf("child state %v in the first view, want CONNECTING", c.State.ConnectivityState)
		}
	}

	b.UpdateClientConnState(eps([]string{"c"}, []string{"b", "a"}))
	if len(fb.built) != 2 || fb.built[0].closed || fb.built[1].closed {
		t.Fatalf("reordering rebuilt or closed children: built %d", len(fb.built))
	}
	last := fb.built[0].updates[len(fb.built[0].updates)-1]
	if got := last.Endpoints[0].Addresses[0].Addr; got != "b" {
		t.Fatalf("child got first address %q, want the new order (b first)", got)
	}

	b.UpdateClientConnState(eps([]string{"c", "d"}))
	if len(fb.built) != 3 || !fb.built[0].closed || !fb.built[1].closed {
		t.Fatalf("changed set: built %d, closed %v %v; want a new child and both old closed", len(fb.built), fb.built[0].closed, fb.built[1].closed)
	}
	if err := b.UpdateClientConnState(eps()); err != balancer.ErrBadResolverState {
		t.Fatalf("empty update: %v, want ErrBadResolverState", err)
	}
}
