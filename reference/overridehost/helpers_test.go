package overridehost_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/clock"
	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/hierarchy"
	"github.com/conformlab/conform/reference/internal/lbtest"
	"github.com/conformlab/conform/reference/overridehost"
	"github.com/conformlab/conform/reference/pickfirst"
	"github.com/conformlab/conform/reference/priority"
	"github.com/conformlab/conform/reference/roundrobin"
)

const (
	ms  = time.Millisecond
	sec = time.Second
)

var (
	at     = lbtest.At
	expect = lbtest.Expect
)

// recorderName is a test root over conform_xds_override_host that records,
// per RPC (its "x-test-rpc" metadata), the actual address list the picker
// reported: what the StatefulSession filter would turn into a cookie.
const recorderName = "conform_test_override_host_recorder"

const rpcKey = "x-test-rpc"

// actual maps RPC ids to the reported address list. Tests are not
// parallel.
var actual map[string]string

func init() { balancer.Register(recorder{}) }

type recorder struct{}

func (recorder) Name() string { return recorderName }
func (recorder) OnClockSeam() {}
func (recorder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return balancer.Get(overridehost.Name).(balancer.ConfigParser).ParseConfig(js)
}
func (recorder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return balancer.Get(overridehost.Name).Build(&recCC{ClientConn: cc}, opts)
}

var _ clock.Aware = recorder{}

type recCC struct{ balancer.ClientConn }

func (cc *recCC) Clock() clock.Clock { return clock.From(cc.ClientConn) }
func (cc *recCC) UpdateState(s balancer.State) {
	s.Picker = recPicker{s.Picker}
	cc.ClientConn.UpdateState(s)
}

type recPicker struct{ balancer.Picker }

func (p recPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	res, err := p.Picker.Pick(info)
	if err == nil {
		md, _ := metadata.FromOutgoingContext(info.Ctx)
		if id := md.Get(rpcKey); len(id) > 0 {
			actual[id[0]] = strings.Join(res.Metadata.Get(overridehost.ActualAddressesHeader), " ")
		}
	}
	return res, err
}

// config is an override_host config over child (a policy and its config).
func config(extra, child string) string {
	if extra != "" {
		extra += ", "
	}
	return `{` + extra + `"childPolicy": [` + child + `]}`
}

var (
	rrChild = `{"` + roundrobin.Name + `": {}}`
	pfChild = `{"` + pickfirst.Name + `": {}}`
	// prioChild is a priority over two round_robin children, p0 first.
	prioChild = `{"` + priority.Name + `": {"children": {
		"p0": {"config": [` + rrChild + `]},
		"p1": {"config": [` + rrChild + `]}},
		"priorities": ["p0", "p1"]}}`
)

func newWorld(t *testing.T, cfg string) *sim.Channel {
	t.Helper()
	actual = map[string]string{}
	return lbtest.NewChannel(t, recorderName, cfg, sim.Options{Seed: 1, Backoff: lbtest.ExactBackoff})
}

func advanceTo(w *sim.Channel, t time.Duration) { w.Advance(t - w.Now()) }

// ep is an endpoint of addrs with an EDS health status ("" for none) and,
// if path is not empty, a hierarchical path.
func ep(status string, path string, addrs ...string) resolver.Endpoint {
	var e resolver.Endpoint
	for _, a := range addrs {
		e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
	}
	if status != "" {
		e = overridehost.SetHealthStatus(e, status)
	}
	if path != "" {
		e = hierarchy.SetOnEndpoint(e, []string{path})
	}
	return e
}

func resolve(t *testing.T, w *sim.Channel, eps ...resolver.Endpoint) {
	t.Helper()
	if err := w.Resolve(resolver.State{Endpoints: eps}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
}

var rpcs int

// send starts an RPC; cookie nil: not in a session; empty: a session
// without a cookie yet. It returns the RPC's id.
func send(w *sim.Channel, cookie []string) string {
	rpcs++
	id := fmt.Sprintf("r%d", rpcs)
	md := metadata.Pairs(rpcKey, id)
	if cookie != nil {
		md.Set(overridehost.SessionHeader, "")
		if len(cookie) > 0 {
			md.Set(overridehost.SessionHeader, overridehost.EncodeCookie(cookie, "cluster:c1"))
		}
	}
	w.StartRPC(id, sim.RPCOptions{Metadata: md, WaitForReady: true})
	return id
}

// served sends one RPC, lets it finish (100 ms) and returns its backend
// and the actual address list the picker reported.
func served(t *testing.T, w *sim.Channel, cookie []string) (string, string) {
	t.Helper()
	id := send(w, cookie)
	w.Advance(100 * ms)
	r := lbtest.RPCResult(t, w.Events(), id)
	if r.Backend == "" {
		return r.Code + " " + r.Err, actual[id]
	}
	return r.Backend, actual[id]
}

// picks lists the pick events of RPC id as "time detail-or-address".
func picks(w *sim.Channel, id string) []lbtest.Stamped {
	var out []lbtest.Stamped
	for _, e := range w.Events() {
		if e.Kind == "pick" && e.RPC == id {
			what := e.Addr
			if e.Detail != "" {
				what = e.Detail
			}
			out = append(out, at(e.T, what))
		}
	}
	return out
}
