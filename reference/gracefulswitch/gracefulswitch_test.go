package gracefulswitch

import (
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
)

// fakeCC records the states the channel is given.
type fakeCC struct {
	balancer.ClientConn
	states []connectivity.State
}

func (cc *fakeCC) UpdateState(s balancer.State) { cc.states = append(cc.states, s.ConnectivityState) }

// fakeLB reports what the test tells it to, and whether it was closed.
type fakeLB struct {
	cc     balancer.ClientConn
	closed bool
	got    int // ClientConnStates received
}

func (b *fakeLB) report(s connectivity.State) { b.cc.UpdateState(balancer.State{ConnectivityState: s}) }
func (b *fakeLB) UpdateClientConnState(balancer.ClientConnState) error {
	b.got++
	return nil
}
func (b *fakeLB) ResolverError(error)                                        {}
func (b *fakeLB) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (b *fakeLB) ExitIdle()                                                  {}
func (b *fakeLB) Close()                                                     { b.closed = true }

// fakeBuilder builds fakeLBs under a name and keeps them.
type fakeBuilder struct {
	name  string
	built []*fakeLB
}

func (f *fakeBuilder) Name() string { return f.name }
func (f *fakeBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	b := &fakeLB{cc: cc}
	f.built = append(f.built, b)
	return b
}

func setup(t *testing.T) (*Balancer, *fakeCC, *fakeLB, *fakeBuilder) {
	t.Helper()
	cc := &fakeCC{}
	gs := New(cc, balancer.BuildOptions{})
	old := &fakeBuilder{name: "old"}
	gs.SwitchTo(old)
	old.built[0].report(connectivity.Ready)
	return gs, cc, old.built[0], &fakeBuilder{name: "new"}
}

func expectStates(t *testing.T, cc *fakeCC, want ...connectivity.State) {
	t.Helper()
	if len(cc.states) != len(want) {
		t.Fatalf("channel states %v, want %v", cc.states, want)
	}
	for i := range want {
		if cc.states[i] != want[i] {
			t.Fatalf("channel states %v, want %v", cc.states, want)
		}
	}
}

// TestSwitch_OldServesWhileNewConnects: L9, Swapping out balancer: the new
// policy's CONNECTING is kept from the channel while the old one is READY;
// its first READY makes it current and closes the old one.
func TestSwitch_OldServesWhileNewConnects(t *testing.T) {
	gs, cc, old, nb := setup(t)
	gs.SwitchTo(nb)
	if err := gs.UpdateClientConnState(balancer.ClientConnState{}); err != nil {
		t.Fatal(err)
	}
	if nb.built[0].got != 1 || old.got != 0 {
		t.Fatalf("the config went to new %d times, old %d: want the new policy only", nb.built[0].got, old.got)
	}
	nb.built[0].report(connectivity.Connecting)
	expectStates(t, cc, connectivity.Ready)
	if old.closed {
		t.Fatal("the old policy was closed before the new one could be picked from")
	}
	nb.built[0].report(connectivity.Ready)
	expectStates(t, cc, connectivity.Ready, connectivity.Ready)
	if !old.closed {
		t.Fatal("the old policy still runs after the new one took over")
	}
	if gs.Current() != nb.built[0] {
		t.Fatal("the new policy is not current")
	}
	old.report(connectivity.TransientFailure)
	expectStates(t, cc, connectivity.Ready, connectivity.Ready)
}

// TestSwitch_NewTakesOverWhenOldLeavesReady: the old policy leaving READY
// during the switch hands the channel to the new one, with its last state.
func TestSwitch_NewTakesOverWhenOldLeavesReady(t *testing.T) {
	gs, cc, old, nb := setup(t)
	gs.SwitchTo(nb)
	nb.built[0].report(connectivity.Connecting)
	old.report(connectivity.Idle)
	expectStates(t, cc, connectivity.Ready, connectivity.Connecting)
	if !old.closed || gs.Current() != nb.built[0] {
		t.Fatal("the new policy did not take over when the old one left READY")
	}
}

// TestSwitch_NewFailingTakesOver: a first report other than CONNECTING
// (TRANSIENT_FAILURE) is the new policy's signal too: it takes over.
func TestSwitch_NewFailingTakesOver(t *testing.T) {
	gs, cc, old, nb := setup(t)
	gs.SwitchTo(nb)
	nb.built[0].report(connectivity.TransientFailure)
	expectStates(t, cc, connectivity.Ready, connectivity.TransientFailure)
	if !old.closed {
		t.Fatal("the old policy still runs")
	}
}

// TestSwitch_SameNameIsNoSwitch: naming the running policy builds nothing.
func TestSwitch_SameNameIsNoSwitch(t *testing.T) {
	gs, _, _, _ := setup(t)
	again := &fakeBuilder{name: "old"}
	gs.SwitchTo(again)
	if len(again.built) != 0 {
		t.Fatal("a config naming the running policy built another")
	}
}

// TestSwitch_PendingReplacedByALaterSwitch: a pending policy that never
// took over is closed when another switch replaces it.
func TestSwitch_PendingReplacedByALaterSwitch(t *testing.T) {
	gs, cc, old, nb := setup(t)
	gs.SwitchTo(nb)
	third := &fakeBuilder{name: "third"}
	gs.SwitchTo(third)
	if !nb.built[0].closed || old.closed {
		t.Fatal("want the pending policy closed and the current one kept")
	}
	third.built[0].report(connectivity.Ready)
	expectStates(t, cc, connectivity.Ready, connectivity.Ready)
	if !old.closed || gs.Current() != third.built[0] {
		t.Fatal("the third policy did not take over")
	}
}
