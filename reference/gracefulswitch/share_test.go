package gracefulswitch_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

// The rules of sharing subchannels across a switch (L9, Swapping out
// balancer), each in the simulator. The policies are sharers: each holds a
// subchannel per address it is given, connects it, and records every state
// it is told; it reports READY (picking its first READY address) while one
// is READY, else CONNECTING.

const (
	shareOld   = "conform_test_share_old"
	shareNew   = "conform_test_share_new"
	shareThird = "conform_test_share_third"
)

func init() {
	for _, n := range []string{shareOld, shareNew, shareThird} {
		balancer.Register(sharerBuilder{n})
	}
}

// built is every sharer built, by builder name, in build order.
var built = map[string][]*sharer{}

type sharerBuilder struct{ name string }

func (b sharerBuilder) Name() string { return b.name }
func (sharerBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &sharerConfig{}
	return c, json.Unmarshal(js, c)
}

// sharerConfig names addresses the sharer leaves out of what it is given.
type sharerConfig struct {
	serviceconfig.LoadBalancingConfig
	Skip   []string `json:"skip"`
	Health bool     `json:"health"` // watch each READY subchannel's health
	All    bool     `json:"all"`    // READY only when every subchannel is
}

func skip(addrs ...string) string {
	js, _ := json.Marshal(sharerConfig{Skip: addrs})
	return string(js)
}
func (sharerBuilder) OnClockSeam() {}
func (b sharerBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	s := &sharer{cc: cc, subs: map[string]balancer.SubConn{}, state: map[string]connectivity.State{}, told: map[string][]string{}, healthTold: map[string][]string{}}
	built[b.name] = append(built[b.name], s)
	return s
}

type sharer struct {
	cc         balancer.ClientConn
	order      []string
	subs       map[string]balancer.SubConn
	state      map[string]connectivity.State
	told       map[string][]string // the states each address's subchannel was reported in
	healthTold map[string][]string // the health reported for each address
	health     bool
	all        bool
	closed     bool
}

func (s *sharer) UpdateClientConnState(ccs balancer.ClientConnState) error {
	var skipped []string
	if c, ok := ccs.BalancerConfig.(*sharerConfig); ok {
		skipped, s.health, s.all = c.Skip, c.Health, c.All
	}
	var want []string
	for _, e := range ccs.ResolverState.Endpoints {
		if a := e.Addresses[0].Addr; !slices.Contains(skipped, a) {
			want = append(want, a)
		}
	}
	for _, a := range slices.Clone(s.order) {
		if !slices.Contains(want, a) {
			s.subs[a].Shutdown()
			delete(s.subs, a)
			s.order = slices.DeleteFunc(s.order, func(x string) bool { return x == a })
		}
	}
	for _, a := range want {
		if _, ok := s.subs[a]; ok {
			continue
		}
		sc, err := s.cc.NewSubConn([]resolver.Address{{Addr: a}}, balancer.NewSubConnOptions{
			StateListener: func(st balancer.SubConnState) { s.onState(a, st) },
		})
		if err != nil {
			return err
		}
		s.subs[a], s.state[a] = sc, connectivity.Idle
		s.order = append(s.order, a)
		sc.Connect()
	}
	s.report()
	return nil
}

func (s *sharer) onState(a string, st balancer.SubConnState) {
	s.told[a] = append(s.told[a], st.ConnectivityState.String())
	if _, ok := s.subs[a]; !ok || s.closed {
		return
	}
	s.state[a] = st.ConnectivityState
	if st.ConnectivityState == connectivity.Idle {
		s.subs[a].Connect()
	}
	if st.ConnectivityState == connectivity.Ready && s.health {
		s.subs[a].RegisterHealthListener(func(h balancer.SubConnState) {
			s.healthTold[a] = append(s.healthTold[a], h.ConnectivityState.String())
		})
	}
	s.report()
}

func (s *sharer) report() {
	for _, a := range s.order {
		if s.all && s.state[a] != connectivity.Ready {
			s.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Connecting, Picker: pickOne{}})
			return
		}
	}
	for _, a := range s.order {
		if s.state[a] == connectivity.Ready {
			s.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Ready, Picker: pickOne{s.subs[a]}})
			return
		}
	}
	s.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Connecting, Picker: pickOne{}})
}

func (s *sharer) ResolverError(error)                                        {}
func (s *sharer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (s *sharer) ExitIdle()                                                  {}
func (s *sharer) Close() {
	s.closed = true
	for _, a := range s.order {
		s.subs[a].Shutdown()
	}
}

type pickOne struct{ sc balancer.SubConn }

func (p pickOne) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	if p.sc == nil {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	return balancer.PickResult{SubConn: p.sc}, nil
}

// shareChannel is a sharer (shareOld) on addrs, b1 on V4a and b2 on V4b,
// run until its connections are up (those not dropped).
func shareChannel(t *testing.T, drop []string, addrs ...string) *sim.Channel {
	t.Helper()
	return shareChannelWith(t, "", sim.Options{Seed: 1, NoHealthCheck: true}, drop, addrs...)
}

func shareChannelWith(t *testing.T, cfg string, opts sim.Options, drop []string, addrs ...string) *sim.Channel {
	t.Helper()
	built = map[string][]*sharer{}
	w := lbtest.NewChannel(t, shareOld, cfg, opts)
	w.AddBackend("b1", lbtest.V4a)
	w.AddBackend("b2", lbtest.V4b)
	for _, a := range drop {
		w.SetFault(a, sim.FaultDrop)
	}
	var eps [][]string
	for _, a := range addrs {
		eps = append(eps, []string{a})
	}
	if err := w.ResolveEndpoints(eps...); err != nil {
		t.Fatal(err)
	}
	w.Advance(100 * time.Millisecond)
	return w
}

// since are the events of kind k at or after from, as "source kind addr
// subchannel".
func since(w *sim.Channel, from time.Duration, k trace.Kind) []string {
	var out []string
	for _, e := range w.Events() {
		if e.T >= from && e.Kind == k {
			out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", e.Addr, strings.Join(e.Addrs, ","), e.Subchannel)))
		}
	}
	return out
}

func servedBy(t *testing.T, w *sim.Channel, id string) string {
	t.Helper()
	w.StartRPC(id, sim.RPCOptions{})
	w.Advance(10 * time.Millisecond)
	for _, e := range w.Events() {
		if e.Kind == trace.KindRPCResult && e.RPC == id {
			return e.Backend
		}
	}
	return "(no result)"
}

// TestShare_PendingGetsTheCurrentConnection: L9, Swapping out balancer:
// "For connections already exist, they will be reused": the new policy,
// asking for a subchannel to an address the old one holds, gets that
// connection, in the state it is in (READY), and no new one is opened.
func TestShare_PendingGetsTheCurrentConnection(t *testing.T) {
	w := shareChannel(t, nil, lbtest.V4a)
	at := w.Now()
	if err := w.SetPolicy(shareNew, ""); err != nil {
		t.Fatal(err)
	}
	w.Advance(100 * time.Millisecond)
	lbtest.Eq(t, "subchannels created at the switch", since(w, at, trace.KindSubchannelNew), []string(nil))
	lbtest.Eq(t, "SYNs after the switch", since(w, at, trace.KindSYN), []string(nil))
	nb := built[shareNew][0]
	lbtest.Eq(t, "the states the new policy was told", nb.told[lbtest.V4a], []string{"READY"})
	lbtest.Eq(t, "the backend serving after the switch", servedBy(t, w, "r1"), "b1")
}

// TestShare_OldShutdownKeepsIt: L9, Swapping out balancer: "For
// connections only in the old balancer's pool, they will be shutdown":
// a connection the new policy also uses is not; the old policy's Shutdown
// of its subchannel (it is closed when the new one takes over) ends only
// its own use, and it is told SHUTDOWN.
func TestShare_OldShutdownKeepsIt(t *testing.T) {
	w := shareChannel(t, nil, lbtest.V4a, lbtest.V4b)
	at := w.Now()
	if err := w.ResolveEndpoints([]string{lbtest.V4a}); err != nil { // the old policy drops b2
		t.Fatal(err)
	}
	if err := w.SetPolicy(shareNew, ""); err != nil {
		t.Fatal(err)
	}
	w.Advance(100 * time.Millisecond)
	old := built[shareOld][0]
	if !old.closed {
		t.Fatal("the old policy was not closed when the new one took over")
	}
	lbtest.Eq(t, "subchannels shut down since", since(w, at, trace.KindSubchannelShutdown), []string{"sc2"})
	lbtest.Eq(t, "the states the old policy was told for b1", old.told[lbtest.V4a], []string{"CONNECTING", "READY", "SHUTDOWN"})
	lbtest.Eq(t, "the backend serving after the switch", servedBy(t, w, "r1"), "b1")
}

// TestShare_StatesReachBothUsers: L9, Swapping out balancer: the pool is
// shared, so a shared subchannel's state changes reach the old policy,
// which still serves, and the new one, which waits for it to connect.
func TestShare_StatesReachBothUsers(t *testing.T) {
	w := shareChannel(t, []string{lbtest.V4b}, lbtest.V4a, lbtest.V4b) // READY on b1, b2 hanging
	at := w.Now()
	if err := w.SetPolicy(shareNew, skip(lbtest.V4a)); err != nil {
		t.Fatal(err)
	}
	w.Advance(10 * time.Millisecond)
	old, nb := built[shareOld][0], built[shareNew][0]
	lbtest.Eq(t, "the new policy's first news of b2", nb.told[lbtest.V4b], []string{"CONNECTING"})
	if old.closed {
		t.Fatal("the old policy was closed while the new one connected")
	}
	w.SetFault(lbtest.V4b, sim.FaultNone)
	w.Advance(3 * time.Second) // a retransmitted SYN gets through
	lbtest.Eq(t, "subchannels created at the switch", since(w, at, trace.KindSubchannelNew), []string(nil))
	lbtest.Eq(t, "the old policy's news of b2", old.told[lbtest.V4b], []string{"CONNECTING", "READY", "SHUTDOWN"})
	lbtest.Eq(t, "the new policy's news of b2", nb.told[lbtest.V4b], []string{"CONNECTING", "READY"})
	lbtest.Eq(t, "the backend serving after the switch", servedBy(t, w, "r1"), "b2")
}

// TestShare_LastReleaseCloses: L9, Swapping out balancer: the connection
// carried over is the new policy's alone once the old one is gone; its
// Shutdown closes it.
func TestShare_LastReleaseCloses(t *testing.T) {
	w := shareChannel(t, nil, lbtest.V4a)
	if err := w.SetPolicy(shareNew, ""); err != nil {
		t.Fatal(err)
	}
	w.Advance(100 * time.Millisecond)
	at := w.Now()
	if err := w.ResolveEndpoints([]string{lbtest.V4b}); err != nil {
		t.Fatal(err)
	}
	w.Advance(100 * time.Millisecond)
	lbtest.Eq(t, "subchannels shut down", since(w, at, trace.KindSubchannelShutdown), []string{"sc1"})
	lbtest.Eq(t, "the new policy's news of b1", built[shareNew][0].told[lbtest.V4a], []string{"READY", "SHUTDOWN"})
}

// TestShare_DroppedPendingReleases: L9, Swapping out balancer: a pending
// policy replaced by a later switch before it took over gives up its share
// without closing the connection the current one uses; the third policy
// gets it in turn.
func TestShare_DroppedPendingReleases(t *testing.T) {
	w := shareChannel(t, []string{lbtest.V4b}, lbtest.V4a, lbtest.V4b) // READY on b1, b2 hanging
	at := w.Now()
	if err := w.SetPolicy(shareNew, skip(lbtest.V4a)); err != nil { // on b2 alone: it waits
		t.Fatal(err)
	}
	w.Advance(10 * time.Millisecond)
	if err := w.SetPolicy(shareThird, ""); err != nil {
		t.Fatal(err)
	}
	w.Advance(100 * time.Millisecond)
	if !built[shareNew][0].closed || !built[shareOld][0].closed {
		t.Fatal("want the pending policy closed by the later switch, and the old one when the third took over")
	}
	lbtest.Eq(t, "subchannels created or shut down since the first switch",
		append(since(w, at, trace.KindSubchannelNew), since(w, at, trace.KindSubchannelShutdown)...), []string(nil))
	lbtest.Eq(t, "the dropped policy's news of b2", built[shareNew][0].told[lbtest.V4b], []string{"CONNECTING", "SHUTDOWN"})
	lbtest.Eq(t, "the third policy's news of b1", built[shareThird][0].told[lbtest.V4a], []string{"READY"})
	lbtest.Eq(t, "the backend serving after the switch", servedBy(t, w, "r1"), "b1")
}

// TestShare_SamePolicyTwoSubchannels: a policy asking twice for the same
// address gets two subchannels, as without a switch: only the pending
// policy joins, and only the current one's subchannels.
func TestShare_SamePolicyTwoSubchannels(t *testing.T) {
	w := shareChannel(t, nil, lbtest.V4a)
	at := w.Now()
	built[shareOld][0].cc.NewSubConn([]resolver.Address{{Addr: lbtest.V4a}}, balancer.NewSubConnOptions{})
	lbtest.Eq(t, "subchannels created", since(w, at, trace.KindSubchannelNew), []string{lbtest.V4a + " sc2"})
}

// TestShare_HealthReachesBothUsers: L9, Swapping out balancer, with A61's
// health watch: a policy joining a subchannel whose health the other
// already watches is told the health last reported, with no second watch
// of the channel's, and later reports reach both.
func TestShare_HealthReachesBothUsers(t *testing.T) {
	w := shareChannelWith(t, `{"health":true}`, sim.Options{Seed: 1}, nil, lbtest.V4a, lbtest.V4b)
	w.SetFault(lbtest.V4b, sim.FaultDown) // the old policy stays READY on b1 alone
	w.Advance(100 * time.Millisecond)
	at := w.Now()
	// The new policy waits for b2 too, so both run while b1's health changes.
	if err := w.SetPolicy(shareNew, `{"health":true,"all":true}`); err != nil {
		t.Fatal(err)
	}
	w.Advance(100 * time.Millisecond)
	old, nb := built[shareOld][0], built[shareNew][0]
	if old.closed {
		t.Fatal("the new policy took over without b2")
	}
	lbtest.Eq(t, "the new policy's health of b1", nb.healthTold[lbtest.V4a], []string{"READY"})
	lbtest.Eq(t, "health reports of the channel's since the switch", since(w, at, trace.KindSubchannelHealth), []string(nil))
	w.SetHealth(lbtest.V4a, connectivity.TransientFailure)
	w.Advance(100 * time.Millisecond)
	lbtest.Eq(t, "the new policy's health of b1", nb.healthTold[lbtest.V4a], []string{"READY", "TRANSIENT_FAILURE"})
	lbtest.Eq(t, "the old policy's health of b1", old.healthTold[lbtest.V4a], []string{"READY", "TRANSIENT_FAILURE"})
}
