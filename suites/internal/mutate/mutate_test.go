package mutate

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// goldens are golden traces of every shape the families edit: attempts and
// refusals, states in both views (lab), re-resolution, xDS ACKs and NACKs,
// RPC results and rpc-served events, timers and subchannels.
var goldens = []string{
	"a61/he-all-refused.sim.jsonl",
	"a61/he-all-refused.lab.jsonl",
	"a61/rr-error-detail.sim.jsonl",
	"a62/tf-picks-fail-fast.lab.jsonl",
	"a56/removed-child-seed.sim.jsonl",
	"a75/idle-timeout-seconds-negative.sim.jsonl",
	"a75/idle-timeout-seconds-negative.lab.jsonl",
	"a75/aggregate-eds-then-dns.sim.jsonl",
	"a61/xds-dual-stack-endpoint.sim.jsonl",
	"a56/eds-ignore-reresolution.sim.jsonl",
	"a62/sticky-tf-idle-timeout.lab.jsonl",
}

func readGolden(t *testing.T, name string) *trace.Trace {
	t.Helper()
	tr, err := trace.ReadFile(filepath.Join("..", "..", "..", "traces", name))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func canonical(t *testing.T, tr *trace.Trace) []byte {
	t.Helper()
	b, err := trace.Canonical(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCandidates_MakeTracesTheReaderTakes applies every candidate of each
// golden trace: the result is in time order, written in canonical form it
// reads back strictly, the golden trace is left as it was, IDs are unique,
// and the harness's stimuli are untouched (an xDS resolver's output is the
// client's, not a stimulus).
func TestCandidates_MakeTracesTheReaderTakes(t *testing.T) {
	for _, name := range goldens {
		t.Run(name, func(t *testing.T) {
			tr := readGolden(t, name)
			before := canonical(t, tr)
			isStimulus := func(e trace.Event) bool { return IsStimulus(tr, e) }
			stimuli := trace.Select(tr.Events, isStimulus)
			cands := Candidates(tr)
			if len(cands) == 0 {
				t.Fatal("no candidates")
			}
			ids := map[string]bool{}
			families := map[string]bool{}
			for _, m := range cands {
				if ids[m.ID] {
					t.Fatalf("two candidates named %s", m.ID)
				}
				ids[m.ID] = true
				families[m.Family] = true
				if m.Description == "" {
					t.Errorf("%s: no description", m.ID)
				}
				bad, err := m.Apply(tr)
				if err != nil {
					continue // a shift before the start of the run: refused
				}
				b := canonical(t, bad)
				if _, err := trace.Read(m.ID, bytes.NewReader(b)); err != nil {
					t.Errorf("%s: the mutated trace does not read back: %v", m.ID, err)
				}
				if bytes.Equal(b, before) {
					t.Errorf("%s: changes nothing", m.ID)
				}
				if got := trace.Select(bad.Events, isStimulus); !slices.EqualFunc(got, stimuli, eventsEqual) {
					t.Errorf("%s: changes the harness's stimuli", m.ID)
				}
			}
			if !bytes.Equal(canonical(t, tr), before) {
				t.Error("applying the candidates changed the golden trace")
			}
			t.Logf("%d candidates from %d families", len(cands), len(families))
		})
	}
}

func eventsEqual(a, b trace.Event) bool { return a.String() == b.String() }

// TestCandidates_AreDeterministic: the same trace gives the same
// candidates, and each the same bytes, every time; ByID finds each again.
func TestCandidates_AreDeterministic(t *testing.T) {
	tr := readGolden(t, goldens[0])
	a, b := Candidates(tr), Candidates(tr)
	if len(a) != len(b) {
		t.Fatalf("%d candidates, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Description != b[i].Description {
			t.Fatalf("candidate %d: %s, then %s", i, a[i].ID, b[i].ID)
		}
		x, errX := a[i].Apply(tr)
		y, errY := b[i].Apply(tr)
		if (errX == nil) != (errY == nil) {
			t.Fatalf("%s: applies once, fails once", a[i].ID)
		}
		if errX == nil && !bytes.Equal(canonical(t, x), canonical(t, y)) {
			t.Fatalf("%s: two different traces", a[i].ID)
		}
		if m, ok := ByID(tr, a[i].ID); !ok || m.Description != a[i].Description {
			t.Fatalf("ByID(%s) does not find it", a[i].ID)
		}
	}
}

// TestFamilies_HaveNamesAndDescriptions: every family has a unique name and
// a one-line description.
func TestFamilies_HaveNamesAndDescriptions(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Families() {
		if f.Name == "" || f.Description == "" || bytes.ContainsRune([]byte(f.Description), '\n') {
			t.Errorf("family %q: a name and a one-line description, please (%q)", f.Name, f.Description)
		}
		if seen[f.Name] {
			t.Errorf("two families named %s", f.Name)
		}
		seen[f.Name] = true
		if g, ok := FamilyNamed(f.Name); !ok || g.Name != f.Name {
			t.Errorf("FamilyNamed(%s) does not find it", f.Name)
		}
	}
}

// A small trace to test the families on: b1 refuses, b2 answers 250 ms
// later; the channel reports CONNECTING then READY in both views; an ACK and
// a NACK; r1 is served by b2.
func small() *trace.Trace {
	s := scenario.New("small").Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("pick_first", `{}`).End(time.Second).MustBuild()
	const a1, a2 = "198.19.0.1:50051", "198.19.0.2:50051"
	ms := time.Millisecond
	cds := "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	return &trace.Trace{Header: trace.NewHeader(s, "reference", trace.ModeSim, 1), Events: []trace.Event{
		{T: 0, Source: trace.SourceHarness, Kind: trace.KindResolverUpdate, Endpoints: [][]string{{a1}, {a2}}},
		{T: 0, Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest, TypeURL: cds, XDS: trace.XDSACK, Version: "1", Nonce: "1"},
		{T: 0, Source: trace.SourcePolicy, Kind: trace.KindBalancerState, State: "CONNECTING"},
		{T: 0, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: a1},
		{T: 1 * ms, Source: trace.SourceDriver, Kind: trace.KindChannelState, State: "CONNECTING"},
		{T: 2 * ms, Source: trace.SourceCapture, Kind: trace.KindRST, Addr: a1},
		{T: 2 * ms, Source: trace.SourcePolicy, Kind: trace.KindResolveNow},
		{T: 250 * ms, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: a2},
		{T: 251 * ms, Source: trace.SourceCapture, Kind: trace.KindSYNACK, Addr: a2},
		{T: 252 * ms, Source: trace.SourcePolicy, Kind: trace.KindBalancerState, State: "READY"},
		{T: 253 * ms, Source: trace.SourceDriver, Kind: trace.KindChannelState, State: "READY"},
		{T: 300 * ms, Source: trace.SourceHarness, Kind: trace.KindRPCStart, RPC: "r1"},
		{T: 301 * ms, Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: "r1", Backend: "b2", Code: "OK"},
		{T: 400 * ms, Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest, TypeURL: cds, XDS: trace.XDSNACK, Version: "1", Nonce: "2",
			Code: "INVALID_ARGUMENT", Err: "bad cluster", Detail: "rejected 2"},
	}}
}

func apply(t *testing.T, tr *trace.Trace, id string) *trace.Trace {
	t.Helper()
	m, ok := ByID(tr, id)
	if !ok {
		t.Fatalf("no candidate %s", id)
	}
	out, err := m.Apply(tr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func render(evs []trace.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	return out
}

func TestShiftAttempt_MovesTheSYNAndItsAnswer(t *testing.T) {
	tr := small()
	got := trace.Select(apply(t, tr, "shift-attempt[2,+40ms]").Events, trace.FromSource(trace.SourceCapture))
	want := []string{
		"+0.0ms capture syn 198.19.0.1:50051",
		"+2.0ms capture rst 198.19.0.1:50051",
		"+290.0ms capture syn 198.19.0.2:50051",
		"+291.0ms capture syn-ack 198.19.0.2:50051",
	}
	if !slices.Equal(render(got), want) {
		t.Errorf("got %q, want %q", render(got), want)
	}
}

func TestInsertState_ChangesBothViews(t *testing.T) {
	tr := small()
	out := apply(t, tr, "insert-state[1,TRANSIENT_FAILURE]")
	var got []string
	for _, e := range out.Events {
		if e.Kind == trace.KindBalancerState || e.Kind == trace.KindChannelState {
			got = append(got, e.String())
		}
	}
	want := []string{
		"+0.0ms policy balancer-state CONNECTING",
		"+1.0ms driver channel-state CONNECTING",
		"+126.0ms policy balancer-state TRANSIENT_FAILURE",
		"+127.0ms driver channel-state TRANSIENT_FAILURE",
		"+252.0ms policy balancer-state READY",
		"+253.0ms driver channel-state READY",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNACKToACK_AcceptsTheRejectedVersion(t *testing.T) {
	out := apply(t, small(), "nack-to-ack[1]")
	last := out.Events[len(out.Events)-1]
	if last.XDS != trace.XDSACK || last.Version != "2" || last.Err != "" || last.Code != "" || last.Detail != "" {
		t.Errorf("got %s", last.String())
	}
}

func TestACKToNACK_KeepsTheVersionBefore(t *testing.T) {
	out := apply(t, small(), "ack-to-nack[1]")
	e := out.Events[1]
	if e.XDS != trace.XDSNACK || e.Version != "" || e.Detail != "rejected 1" || e.Err == "" {
		t.Errorf("got %s", e.String())
	}
}

func TestServeOn_ChangesTheBackend(t *testing.T) {
	out := apply(t, small(), "serve-on[r1,b1]")
	r := trace.Select(out.Events, trace.OfKind(trace.KindRPCResult))
	if len(r) != 1 || r[0].Backend != "b1" || r[0].Code != "OK" {
		t.Errorf("got %q", render(r))
	}
}

func TestDropResolveNow_RemovesTheRequest(t *testing.T) {
	out := apply(t, small(), "drop-resolve-now[1]")
	if rn := trace.Select(out.Events, trace.OfKind(trace.KindResolveNow)); len(rn) != 0 {
		t.Errorf("left %q", render(rn))
	}
}

func TestApply_RefusesEventsBeforeTheStart(t *testing.T) {
	tr := small()
	if _, ok := ByID(tr, "shift-attempt[1,-40ms]"); ok {
		t.Error("a shift before the start of the run is offered")
	}
}

func TestReversePriorities_ReversesTheOutermostList(t *testing.T) {
	got, ok := reversedPriorities(`{"children":{"a":{"config":[{"p":{"priorities":["x","y"]}}]}},"priorities":["a","b","c"]}`)
	want := `{"children":{"a":{"config":[{"p":{"priorities":["x","y"]}}]}},"priorities":["c","b","a"]}`
	if !ok || got != want {
		t.Errorf("got %s (%v), want %s", got, ok, want)
	}
}

func TestResolverFamilies_OnlyForAnXDSResolversOutput(t *testing.T) {
	for _, name := range []string{"a61/he-all-refused.sim.jsonl", "a56/removed-child-seed.sim.jsonl"} {
		for _, m := range Candidates(readGolden(t, name)) {
			switch m.Family {
			case "split-endpoint", "reverse-endpoint", "stale-update", "reverse-priorities", "rename-policy", "swap-policies":
				t.Errorf("%s: %s changes the harness's resolver updates or config", name, m.ID)
			}
		}
	}
}

// TestWatchHealth_ReportsTheServedHealthAtReady verifies watch-health adds
// a subchannel-health as the subchannel turns READY, with the health its
// address served then (the last health-set on it).
func TestWatchHealth_ReportsTheServedHealthAtReady(t *testing.T) {
	const a1 = "198.19.0.1:50051"
	tr := small()
	tr.Events = append([]trace.Event{{T: 0, Source: trace.SourceHarness, Kind: trace.KindHealthSet, Addr: a1, State: "TRANSIENT_FAILURE"}}, tr.Events...)
	tr.Events = append(tr.Events, trace.Event{T: 500 * time.Millisecond, Source: trace.SourcePolicy, Kind: trace.KindSubchannelState, Subchannel: "sc1", Addr: a1, State: "READY"})
	out := apply(t, tr, "watch-health[subchannel-state#1]")
	hs := trace.Select(out.Events, trace.OfKind(trace.KindSubchannelHealth))
	if want := []string{"+500.0ms policy subchannel-health 198.19.0.1:50051 TRANSIENT_FAILURE sc=sc1"}; !slices.Equal(render(hs), want) {
		t.Errorf("got %q, want %q", render(hs), want)
	}
}

// The channel's own IDLE (its idle timeout's), which its policy never
// reports, is the one drop-channel-state removes; the policy's view stays.
func TestDropChannelState_RemovesTheChannelsOwnState(t *testing.T) {
	tr := readGolden(t, "a62/sticky-tf-idle-timeout.lab.jsonl")
	var id string
	for _, m := range Candidates(tr) {
		if m.Family == "drop-channel-state" && strings.Contains(m.Description, "IDLE") {
			id = m.ID
			break
		}
	}
	if id == "" {
		t.Fatal("no drop-channel-state candidate for the channel's IDLE")
	}
	out := apply(t, tr, id)
	if idle := trace.Select(out.Events, trace.OfKind(trace.KindChannelState), func(e trace.Event) bool { return e.State == "IDLE" }); len(idle) != 0 {
		t.Errorf("%s left %q", id, render(idle))
	}
	root := func(e trace.Event) bool { return e.Kind == trace.KindBalancerState }
	if a, b := render(trace.Select(tr.Events, root)), render(trace.Select(out.Events, root)); !slices.Equal(a, b) {
		t.Errorf("%s changed the policy's states: %q, now %q", id, a, b)
	}
}
