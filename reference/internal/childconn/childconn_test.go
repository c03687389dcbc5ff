package childconn

import (
	"testing"

	"github.com/conformlab/conform/harness/clock"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
)

// TestReports_TakeInOrder_DropAfterClose verifies that reports are taken
// oldest first, once, and that Close drops pending and later reports.
func TestReports_TakeInOrder_DropAfterClose(t *testing.T) {
	var r Reports
	r.Add(balancer.State{ConnectivityState: connectivity.Connecting})
	r.Add(balancer.State{ConnectivityState: connectivity.Ready})
	if rs := r.Take(); len(rs) != 2 || rs[0].ConnectivityState != connectivity.Connecting || rs[1].ConnectivityState != connectivity.Ready {
		t.Errorf("Take = %v, want [CONNECTING READY]", rs)
	}
	if rs := r.Take(); len(rs) != 0 {
		t.Errorf("second Take = %v, want none", rs)
	}
	r.Add(balancer.State{ConnectivityState: connectivity.Idle})
	r.Close()
	if !r.Closed() {
		t.Error("Closed = false after Close")
	}
	if r.Add(balancer.State{ConnectivityState: connectivity.Ready}) {
		t.Error("Add after Close recorded the state")
	}
	if rs := r.Take(); len(rs) != 0 {
		t.Errorf("Take after Close = %v, want none", rs)
	}
}

type clockCC struct {
	balancer.ClientConn
	clk clock.Clock
}

func (c clockCC) Clock() clock.Clock { return c.clk }

// TestClientConn_RoutesStateForwardsClock verifies that UpdateState goes to
// OnState and that the parent's clock is the child's.
func TestClientConn_RoutesStateForwardsClock(t *testing.T) {
	var parentClock clock.Clock = clock.NewVirtual(1, nil)
	var got []balancer.State
	w := &ClientConn{ClientConn: clockCC{clk: parentClock}, OnState: func(s balancer.State) { got = append(got, s) }}
	w.UpdateState(balancer.State{ConnectivityState: connectivity.Ready})
	if len(got) != 1 || got[0].ConnectivityState != connectivity.Ready {
		t.Errorf("OnState got %v, want [READY]", got)
	}
	if clock.From(w) != parentClock {
		t.Error("the child's clock is not the parent's")
	}
}
