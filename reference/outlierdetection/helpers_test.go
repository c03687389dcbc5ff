package outlierdetection_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/endpoints"
	"github.com/conformlab/conform/reference/internal/lbtest"
	"github.com/conformlab/conform/reference/outlierdetection"
	"github.com/conformlab/conform/reference/pickfirst"
)

const ms = time.Millisecond

// routerName is a test child for outlier detection: a petiole like
// round_robin (one conform_pick_first per endpoint, generic health
// reporting on) whose picker sends an RPC to the endpoint whose first
// address is in the RPC's "x-test-endpoint" metadata. Tests use it to make
// the calls to one endpoint fail: the simulator's backends always answer
// OK, so a failing call is one whose deadline (0.5 ms) ends before the
// answer (1 ms RTT), after the pick.
const routerName = "conform_test_od_router"

const routeKey = "x-test-endpoint"

func init() { balancer.Register(routerBuilder{}) }

type routerBuilder struct{}

func (routerBuilder) Name() string { return routerName }
func (routerBuilder) OnClockSeam() {}
func (routerBuilder) Build(cc balancer.ClientConn, bopts balancer.BuildOptions) balancer.Balancer {
	return endpoints.New(cc, bopts, endpoints.Options{
		Child:         balancer.Get(pickfirst.Name),
		PrepareChild:  pickfirst.EnableHealthReporting,
		AutoReconnect: true,
		OnChange: func(v endpoints.View) {
			p := routerPicker{}
			st := connectivity.Connecting
			for _, c := range v.Children {
				if c.State.Picker != nil {
					p[c.Endpoint.Addresses[0].Addr] = c.State.Picker
				}
				if c.State.ConnectivityState == connectivity.Ready {
					st = connectivity.Ready
				}
			}
			cc.UpdateState(balancer.State{ConnectivityState: st, Picker: p})
		},
	})
}

var _ clock.Aware = routerBuilder{}

type routerPicker map[string]balancer.Picker

func (p routerPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	md, _ := metadata.FromOutgoingContext(info.Ctx)
	to := md.Get(routeKey)
	if len(to) == 0 {
		return balancer.PickResult{}, status.Error(codes.InvalidArgument, "test RPC without "+routeKey)
	}
	if c, ok := p[to[0]]; ok {
		return c.Pick(info)
	}
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}

// odConfig is an outlier detection config over the router; fields is the
// rest of the JSON object.
func odConfig(fields string) string {
	if fields != "" {
		fields += ", "
	}
	return `{` + fields + `"childPolicy": [{"` + routerName + `": {}}]}`
}

// newWorld builds conform_outlier_detection with cfg in a simulator with a
// 1 ms RTT and jitter-free backoff.
func newWorld(t *testing.T, cfg string, seed uint64) *sim.Channel {
	t.Helper()
	return lbtest.NewChannel(t, outlierdetection.Name, cfg, sim.Options{Seed: seed, Backoff: lbtest.ExactBackoff})
}

var rpcs int

// call sends one RPC to the endpoint whose first address is to; a failing
// one ends with DEADLINE_EXCEEDED after it was picked, so its picker's Done
// sees the failure. It returns the RPC's id.
func call(w *sim.Channel, to string, fail bool) string {
	rpcs++
	id := fmt.Sprintf("r%d", rpcs)
	o := sim.RPCOptions{Metadata: metadata.Pairs(routeKey, to)}
	if fail {
		o.Deadline = 500 * time.Microsecond
	}
	w.StartRPC(id, o)
	return id
}

// calls sends n RPCs to to, spaced 1 ms apart, and lets them finish.
func calls(w *sim.Channel, to string, n int, fail bool) {
	for range n {
		call(w, to, fail)
		w.Advance(ms)
	}
	w.Advance(10 * ms)
}

// probe sends one RPC to to and says how it ended: the backend, or the
// status code and the message's tail.
func probe(t *testing.T, w *sim.Channel, to string) string {
	t.Helper()
	id := call(w, to, false)
	w.Advance(10 * ms)
	r := lbtest.RPCResult(t, w.Events(), id)
	if r.Backend != "" {
		return r.Backend
	}
	if strings.Contains(r.Err, "ejected by outlier detection") {
		return r.Code + " ejected"
	}
	return r.Code + " " + r.Err
}
