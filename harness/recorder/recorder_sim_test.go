package recorder_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"

	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/overridehost"
	"github.com/conformlab/conform/reference/pickfirst"
	"github.com/conformlab/conform/reference/roundrobin"
)

const (
	v4a = "198.18.0.10:443"
	v6a = "[fd00:c0f::10]:443"
	v4b = "198.18.0.11:443"
	v6b = "[fd00:c0f::11]:443"
)

var builderSeq atomic.Int64

// recordedChannel builds a simulated channel whose policy is child wrapped in
// a recorder that records into the returned buffer.
func recordedChannel(t *testing.T, child, cfg string) (*sim.Channel, *recorder.Buffer) {
	t.Helper()
	buf := recorder.NewBuffer(0)
	name := fmt.Sprintf("conform_recorder_test_%d", builderSeq.Add(1))
	balancer.Register(recorder.New(balancer.Get(child), recorder.Options{Name: name, Sink: buf}))
	w, err := sim.New(name, cfg, sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, buf
}

// rpc starts an RPC carrying its id in the metadata the recorder reads.
func rpc(w *sim.Channel, id string) {
	w.StartRPC(id, sim.RPCOptions{WaitForReady: true, Metadata: metadata.Pairs(recorder.RPCIDKey, id)})
}

// policyEvents keeps the policy's events (stimuli are checked separately)
// without timer ids, which differ: the simulator's count its own network
// timers too.
func policyEvents(evs []trace.Event) []trace.Event {
	var out []trace.Event
	for _, e := range trace.Select(evs, trace.FromSource(trace.SourcePolicy)) {
		e.TimerID = 0
		out = append(out, e)
	}
	return out
}

// sameLanes fails t unless got and want have the same events lane by lane.
func sameLanes(t *testing.T, got, want []trace.Event) {
	t.Helper()
	g, w := trace.ByLane(got), trace.ByLane(want)
	lanes := map[string]bool{}
	for l := range g {
		lanes[l] = true
	}
	for l := range w {
		lanes[l] = true
	}
	for l := range lanes {
		if !slices.EqualFunc(g[l], w[l], func(a, b trace.Event) bool { return a.String() == b.String() }) {
			t.Errorf("lane %q:\nrecorder:\n%s\nsimulator:\n%s", l, lines(g[l]), lines(w[l]))
		}
	}
	if len(got) == 0 {
		t.Error("the recorder recorded nothing")
	}
}

func lines(evs []trace.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}

// TestRecorder_MatchesSimulator_PickFirstHappyEyeballs verifies that around
// conform_pick_first on virtual time the recorder records, lane by lane and
// at the same times, exactly the policy events the simulator records:
// subchannels, connects, states, timers, balancer states and picks.
func TestRecorder_MatchesSimulator_PickFirstHappyEyeballs(t *testing.T) {
	w, buf := recordedChannel(t, pickfirst.Name, `{"shuffleAddressList":false}`)
	if !w.Virtual() {
		t.Fatal("the recorder around a seam-aware child does not run on virtual time")
	}
	w.AddBackend("b0", v4a, v6a)
	w.SetFault(v6a, sim.FaultDrop)
	w.ResolveEndpoints([]string{v6a, v4a})
	rpc(w, "r1")
	w.Advance(30 * time.Second)
	rpc(w, "r2")
	w.Advance(time.Second)
	sameLanes(t, policyEvents(buf.Events()), policyEvents(w.Events()))
	if n := len(trace.Select(buf.Events(), trace.OfKind(trace.KindTimerStart))); n == 0 {
		t.Error("no timer-start recorded: the child's Happy Eyeballs timer was not observed")
	}
	ups := trace.Select(buf.Events(), trace.OfKind(trace.KindResolverUpdate))
	if len(ups) != 1 || !slices.Equal(ups[0].Endpoints[0], []string{v6a, v4a}) {
		t.Errorf("resolver updates = %v, want one with [%s %s]", ups, v6a, v4a)
	}
}

// TestRecorder_MatchesSimulator_RoundRobinHealth verifies that health
// updates reach the recorder (subchannel-health) when the child registers a
// health listener, and match the simulator's.
func TestRecorder_MatchesSimulator_RoundRobinHealth(t *testing.T) {
	w, buf := recordedChannel(t, roundrobin.Name, "")
	w.AddBackend("b0", v4a)
	w.AddBackend("b1", v4b)
	w.ResolveEndpoints([]string{v4a}, []string{v4b})
	w.Advance(time.Second)
	w.SetHealth(v4b, connectivity.TransientFailure)
	w.Advance(time.Second)
	rpc(w, "r1")
	w.Advance(time.Second)
	sameLanes(t, policyEvents(buf.Events()), policyEvents(w.Events()))
	health := trace.Select(buf.Events(), trace.OfKind(trace.KindSubchannelHealth), func(e trace.Event) bool {
		return e.Addr == v4b && e.State == "TRANSIENT_FAILURE"
	})
	if len(health) != 1 {
		t.Errorf("health TRANSIENT_FAILURE on %s recorded %d times, want 1:\n%s", v4b, len(health), lines(buf.Events()))
	}
}

// recordedChannelWithConfig builds a simulated channel on the registered
// conform_recorder with the given config (wall time: the registered form
// does not know its child in advance).
func recordedChannelWithConfig(t *testing.T, cfg string) *sim.Channel {
	t.Helper()
	w, err := sim.New(recorder.Name, cfg, sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// TestRecorder_MatchesSimulator_SessionAddrs verifies that the recorder and
// the simulator both put on a session's pick the address list
// conform_xds_override_host reports for the cookie (A61, Changes to
// Stateful Session Affinity), the address used first, and none on a pick
// outside a session.
func TestRecorder_MatchesSimulator_SessionAddrs(t *testing.T) {
	if trace.SessionAddrsKey != overridehost.ActualAddressesHeader {
		t.Fatalf("trace.SessionAddrsKey %q, the reference reports under %q", trace.SessionAddrsKey, overridehost.ActualAddressesHeader)
	}
	w, buf := recordedChannel(t, overridehost.Name, `{"childPolicy": [{"`+roundrobin.Name+`": {}}]}`)
	w.AddBackend("b0", v4a, v6a)
	w.SetFault(v6a, sim.FaultReset)
	w.ResolveEndpoints([]string{v6a, v4a})
	w.Advance(time.Second)
	session := func(id string, cookie ...string) {
		md := metadata.Pairs(recorder.RPCIDKey, id, overridehost.SessionHeader, "")
		if len(cookie) > 0 {
			md.Set(overridehost.SessionHeader, overridehost.EncodeCookie(cookie, ""))
		}
		w.StartRPC(id, sim.RPCOptions{WaitForReady: true, Metadata: md})
	}
	session("s1")
	session("s2", v6a, v4a)
	rpc(w, "n1")
	w.Advance(time.Second)
	sameLanes(t, policyEvents(buf.Events()), policyEvents(w.Events()))
	want := map[string][]string{"s1": {v4a, v6a}, "s2": {v4a, v6a}, "n1": nil}
	picked := map[string]bool{}
	for _, e := range trace.Select(buf.Events(), trace.OfKind(trace.KindPick), func(e trace.Event) bool { return e.Addr != "" }) {
		picked[e.RPC] = true
		if !slices.Equal(e.SessionAddrs, want[e.RPC]) {
			t.Errorf("pick of %s: session_addrs %v, want %v", e.RPC, e.SessionAddrs, want[e.RPC])
		}
	}
	if len(picked) != len(want) {
		t.Errorf("picked %v, want one pick each of %v:\n%s", picked, want, lines(buf.Events()))
	}
}
