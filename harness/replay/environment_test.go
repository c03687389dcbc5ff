package replay_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/roundrobin"
)

// The addresses the environment tests record: field addresses, as a
// client's resolver would give them.
const (
	v4a = "198.18.0.10:443"
	v6a = "[fd00:c0f::10]:443"
	v4b = "198.18.0.11:443"
	v4c = "198.18.0.12:443"
)

// fieldView keeps what a recorder in a real client would have seen: the
// policy's events and the resolver updates; never the faults.
func fieldView(evs []trace.Event) []trace.Event {
	return trace.Select(evs, func(e trace.Event) bool {
		return e.Source == trace.SourcePolicy || e.Kind == trace.KindResolverUpdate
	})
}

// replayAddr derives a replayed backend's addresses, different from the
// recorded ones so that the test sees the mapping at work.
func replayAddr(_ string, i int, fam scenario.Family) string {
	if fam == scenario.IPv4 {
		return fmt.Sprintf("198.18.7.%d:8080", i+1)
	}
	return fmt.Sprintf("[fd00:c0f::7:%d]:8080", i+1)
}

var simFaults = map[scenario.FaultType]sim.Fault{
	scenario.Drop: sim.FaultDrop, scenario.Reset: sim.FaultReset, scenario.Stall: sim.FaultStall, scenario.Down: sim.FaultDown,
}

// replayIn runs s, whose steps are all at fixed times, in the simulator on
// conform_round_robin with seed 1.
func replayIn(t *testing.T, s *scenario.Scenario) []trace.Event {
	t.Helper()
	w, err := sim.New(roundrobin.Name, "", sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, b := range s.Backends {
		var addrs []string
		for _, fam := range b.Stack.Families() {
			addrs = append(addrs, replayAddr(b.Name, i, fam))
		}
		w.AddBackend(b.Name, addrs...)
	}
	for _, st := range s.Steps {
		if st.After != nil {
			t.Fatalf("inferred step %v is triggered by an event", st)
		}
		w.Advance(st.At - w.Now())
		apply(t, w, s, st.Action)
	}
	w.Advance(s.End - w.Now())
	return w.Events()
}

func apply(t *testing.T, w *sim.Channel, s *scenario.Scenario, a scenario.Action) {
	t.Helper()
	concrete := func(sym scenario.Addr) string {
		c, err := s.Concrete(sym, replayAddr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	switch a := a.(type) {
	case scenario.SetFault:
		w.SetFault(concrete(a.Addr), simFaults[a.Fault])
	case scenario.ClearFault:
		w.SetFault(concrete(a.Addr), sim.FaultNone)
	case scenario.ResolverUpdate:
		eps, err := s.ConcreteEndpoints(a.Endpoints, replayAddr)
		if err != nil {
			t.Fatal(err)
		}
		w.ResolveEndpoints(eps...)
	case scenario.StartRPC:
		w.StartRPC(a.ID, sim.RPCOptions{WaitForReady: a.WaitForReady, Deadline: a.Deadline, Metadata: metadata.Pairs(recorder.RPCIDKey, a.ID)})
	default:
		t.Fatalf("inferred action %T cannot be replayed", a)
	}
}

// statesByAddr lists, per address named by name, the "time STATE" sequence
// of the single-address subchannels created for it.
func statesByAddr(evs []trace.Event, name func(string) string) map[string][]string {
	addrOf := map[string]string{}
	out := map[string][]string{}
	for _, e := range evs {
		switch e.Kind {
		case trace.KindSubchannelNew:
			addrOf[e.Subchannel] = name(e.Addrs[0])
		case trace.KindSubchannelState:
			a := addrOf[e.Subchannel]
			out[a] = append(out[a], trace.FormatT(e.T)+" "+e.State)
		}
	}
	return out
}

// faultsOf renders the fault steps of s, one "at action addr fault" a step.
func faultsOf(s *scenario.Scenario) []string {
	var out []string
	for _, st := range s.Steps {
		switch a := st.Action.(type) {
		case scenario.SetFault:
			out = append(out, fmt.Sprintf("%s %s %s", trace.FormatT(st.At), a.Addr, a.Fault))
		case scenario.ClearFault:
			out = append(out, fmt.Sprintf("%s %s clear", trace.FormatT(st.At), a.Addr))
		}
	}
	return out
}

// checkReplay infers the environment of the recorded events, checks its
// faults against want, replays it and compares the subchannel-state
// sequences per address with the recorded ones.
func checkReplay(t *testing.T, recorded []trace.Event, want ...string) *scenario.Scenario {
	t.Helper()
	s, m, err := replay.Environment(fieldView(recorded))
	if err != nil {
		t.Fatal(err)
	}
	if got := faultsOf(s); !slices.Equal(got, want) {
		t.Errorf("inferred faults:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	symbolicOfReplay := s.Symbolic(replayAddr)
	got := statesByAddr(replayIn(t, s), func(a string) string { return string(symbolicOfReplay[a]) })
	wantStates := statesByAddr(recorded, func(a string) string { return string(m[a]) })
	for _, a := range slices.Sorted(maps.Keys(wantStates)) {
		if !slices.Equal(got[a], wantStates[a]) {
			t.Errorf("%s: replayed states\n  %v\nrecorded\n  %v", a, got[a], wantStates[a])
		}
	}
	if len(got) != len(wantStates) {
		t.Errorf("replay has subchannels on %d addresses, the recording on %d", len(got), len(wantStates))
	}
	return s
}

// TestEnvironment_DropResetHealthy verifies the three inference rules on a
// known setup: a dual-stack endpoint whose IPv6 address drops (abandoned
// for IPv4 after the Connection Attempt Delay) and a refusing IPv4 endpoint
// become exactly a drop and a reset, the dual-stack addresses one backend,
// and the replay gives the recorded state sequences per address.
func TestEnvironment_DropResetHealthy(t *testing.T) {
	w, err := sim.New(roundrobin.Name, "", sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddBackend("x", v4a, v6a)
	w.AddBackend("y", v4b)
	w.SetFault(v6a, sim.FaultDrop)
	w.SetFault(v4b, sim.FaultReset)
	w.ResolveEndpoints([]string{v6a, v4a}, []string{v4b})
	w.Advance(time.Second)
	w.StartRPC("r1", sim.RPCOptions{})
	w.Advance(10 * time.Second)
	s := checkReplay(t, w.Events(), "+0.0ms b1/ipv6 drop", "+0.0ms b2/ipv4 reset")
	if len(s.Backends) != 2 || s.Backends[0] != (scenario.Backend{Name: "b1", Stack: scenario.Dual}) || s.Backends[1].Stack != scenario.IPv4Only {
		t.Errorf("backends %v, want b1 dual and b2 ipv4", s.Backends)
	}
	for _, line := range []string{"b1/ipv4 = " + v4a, "b1/ipv6 = " + v6a, "b2/ipv4 = " + v4b} {
		if !strings.Contains(s.Description, line) {
			t.Errorf("description does not document %q:\n%s", line, s.Description)
		}
	}
	if !hasRPC(s, "r1", time.Second) {
		t.Errorf("no RPC r1 at 1s in %v", s.Steps)
	}
}

func hasRPC(s *scenario.Scenario, id string, at time.Duration) bool {
	for _, st := range s.Steps {
		if r, ok := st.Action.(scenario.StartRPC); ok && r.ID == id && st.At == at {
			return true
		}
	}
	return false
}

// TestEnvironment_RefusalEndsBetweenAttempts verifies when a change is
// placed: a reset cleared while the subchannel backs off is inferred as
// cleared midway between the last refused attempt and the first answered
// one, and the replay reconnects at the recorded time.
func TestEnvironment_RefusalEndsBetweenAttempts(t *testing.T) {
	w, err := sim.New(roundrobin.Name, "", sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddBackend("x", v4a)
	w.SetFault(v4a, sim.FaultReset)
	w.ResolveEndpoints([]string{v4a})
	w.Advance(4 * time.Second)
	w.SetFault(v4a, sim.FaultNone)
	w.Advance(10 * time.Second)
	evs := w.Events()
	lastRefused, firstAnswered := lastBefore(evs, "TRANSIENT_FAILURE", 4*time.Second), firstAfter(evs, "CONNECTING", 4*time.Second)
	mid := lastRefused + (firstAnswered-lastRefused)/2
	checkReplay(t, evs, "+0.0ms b1/ipv4 reset", trace.FormatT(mid)+" b1/ipv4 clear")
}

// TestEnvironment_DropClearedDuringAttempt verifies the retransmission
// rule: an attempt that hung and then succeeded was answered by a SYN
// retransmission, so the drop is cleared between the retransmissions at 1 s
// and 3 s.
func TestEnvironment_DropClearedDuringAttempt(t *testing.T) {
	w, err := sim.New(roundrobin.Name, "", sim.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddBackend("x", v4c)
	w.SetFault(v4c, sim.FaultDrop)
	w.ResolveEndpoints([]string{v4c})
	w.Advance(1500 * time.Millisecond)
	w.SetFault(v4c, sim.FaultNone)
	w.Advance(10 * time.Second)
	checkReplay(t, w.Events(), "+0.0ms b1/ipv4 drop", "+2.000s b1/ipv4 clear")
}

func lastBefore(evs []trace.Event, state string, t time.Duration) time.Duration {
	var last time.Duration
	for _, e := range evs {
		if e.Kind == trace.KindSubchannelState && e.State == state && e.T < t {
			last = e.T
		}
	}
	return last
}

func firstAfter(evs []trace.Event, state string, t time.Duration) time.Duration {
	for _, e := range evs {
		if e.Kind == trace.KindSubchannelState && e.State == state && e.T >= t {
			return e.T
		}
	}
	return -1
}

// TestEnvironment_AnonymousPicks verifies how RPCs without an id are
// counted: picks after a new picker retry the queued RPCs first; any pick
// beyond those is a new RPC.
func TestEnvironment_AnonymousPicks(t *testing.T) {
	ms := time.Millisecond
	pick := func(at time.Duration, detail string) trace.Event {
		e := trace.Event{T: at, Source: trace.SourcePolicy, Kind: trace.KindPick, Subchannel: "sc1", Addr: v4a}
		if detail != "" {
			e = trace.Event{T: at, Source: trace.SourcePolicy, Kind: trace.KindPick, Err: "no SubConn is available", Detail: detail}
		}
		return e
	}
	evs := []trace.Event{
		{T: 0, Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: [][]string{{v4a}}},
		pick(1*ms, "queued"),
		pick(2*ms, "queued"),
		{T: 3 * ms, Source: trace.SourcePolicy, Kind: trace.KindBalancerState, State: "READY"},
		pick(3*ms, ""),
		pick(3*ms, ""),
		pick(4*ms, ""),
	}
	s, _, err := replay.Environment(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range s.Steps {
		if r, ok := st.Action.(scenario.StartRPC); ok {
			got = append(got, fmt.Sprintf("%s@%v", r.ID, st.At))
		}
	}
	if want := []string{"p1@1ms", "p2@2ms", "p3@4ms"}; !slices.Equal(got, want) {
		t.Fatalf("RPCs %v, want %v", got, want)
	}
}

// TestEnvironment_RejectsHostnames verifies that a trace naming addresses
// that are not ip:port literals is refused with the address, since a
// scenario cannot give them a family.
func TestEnvironment_RejectsHostnames(t *testing.T) {
	evs := []trace.Event{{Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: [][]string{{"example.com:443"}}}}
	if _, _, err := replay.Environment(evs); err == nil || !strings.Contains(err.Error(), "example.com:443") {
		t.Fatalf("Environment = %v, want an error naming example.com:443", err)
	}
}

// TestEnvironment_ReplaysHealthSets verifies that a trace's health-set
// events come back as health steps, at their times, for their service name
// (READY as SERVING), and that one on an address the client never had is
// named in the description instead.
func TestEnvironment_ReplaysHealthSets(t *testing.T) {
	ms := time.Millisecond
	evs := []trace.Event{
		{T: 0, Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: [][]string{{v4a}}},
		{T: 100 * ms, Source: trace.SourceHarness, Kind: trace.KindHealthSet, Addr: v4a, Service: "svc", State: "TRANSIENT_FAILURE"},
		{T: 200 * ms, Source: trace.SourceHarness, Kind: trace.KindHealthSet, Addr: v4a, Service: "svc", State: "READY"},
		{T: 300 * ms, Source: trace.SourceHarness, Kind: trace.KindHealthSet, Addr: v4c, State: "TRANSIENT_FAILURE"},
	}
	s, _, err := replay.Environment(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range s.Steps {
		if h, ok := st.Action.(scenario.SetHealth); ok {
			got = append(got, fmt.Sprintf("%v %s %s %s", st.At, h.Addr, h.Service, h.Status))
		}
	}
	if want := []string{"100ms b1/ipv4 svc NOT_SERVING", "200ms b1/ipv4 svc SERVING"}; !slices.Equal(got, want) {
		t.Errorf("health steps %q, want %q", got, want)
	}
	if !strings.Contains(s.Description, "Not replayed: health status of "+v4c) {
		t.Errorf("the description does not name the health status left out:\n%s", s.Description)
	}
}
