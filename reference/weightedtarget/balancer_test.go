package weightedtarget

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/lbtest"
	"google.golang.org/grpc/connectivity"
)

// TestWeightedTarget_PickDistribution_FollowsWeights verifies A28, Weighted
// target LB policy: picks go to READY children at random in proportion to
// their weights; with one seed the sequence of picks is repeatable.
func TestWeightedTarget_PickDistribution_FollowsWeights(t *testing.T) {
	const n = 3000
	targets := []tgt{{"a", 1, "READY"}, {"b", 3, "READY"}, {"c", 6, "READY"}}
	run := func() (map[string]int, string) {
		w := newWorld(t, 42)
		push(t, w, config(targets...), targets...)
		counts := map[string]int{}
		var seq strings.Builder
		for _, c := range pickMany(w, n) {
			counts[c]++
			seq.WriteString(c)
		}
		return counts, seq.String()
	}
	counts, seq := run()
	for _, tg := range targets {
		p := float64(tg.weight) / 10
		want, sigma := n*p, math.Sqrt(n*p*(1-p))
		if got := float64(counts[tg.name]); math.Abs(got-want) > 4*sigma {
			t.Errorf("target %s (weight %d) picked %v times of %d, want %v ± %.0f", tg.name, tg.weight, got, n, want, 4*sigma)
		}
	}
	if _, again := run(); again != seq {
		t.Error("same seed gave a different sequence of picks")
	}
}

// TestWeightedTarget_OnlyReadyChildrenPicked verifies A28, Weighted target
// LB policy: only children reporting READY receive picks.
func TestWeightedTarget_OnlyReadyChildrenPicked(t *testing.T) {
	w := newWorld(t, 1)
	targets := []tgt{{"a", 1, "READY"}, {"b", 100, "TRANSIENT_FAILURE"}, {"c", 100, "CONNECTING"}}
	push(t, w, config(targets...), targets...)
	lbtest.Eq(t, "state", w.State(), connectivity.Ready)
	for i := 0; i < 50; i++ {
		if c := lbtest.InUse(t, w); c != "a" {
			t.Fatalf("pick %d went to %s", i, c)
		}
	}
}

// TestWeightedTarget_AggregatedState verifies A28, Weighted target LB
// policy: the policy's state aggregates its children's (READY over
// CONNECTING over IDLE over TRANSIENT_FAILURE).
func TestWeightedTarget_AggregatedState(t *testing.T) {
	w := newWorld(t, 1)
	targets := []tgt{{name: "a", weight: 1}, {name: "b", weight: 1}}
	push(t, w, config(targets...), targets...)
	lbtest.Eq(t, "before any report", w.State(), connectivity.Connecting)
	steps := []struct {
		a, b connectivity.State
		want connectivity.State
	}{
		{connectivity.Idle, connectivity.Connecting, connectivity.Connecting},
		{connectivity.Idle, connectivity.TransientFailure, connectivity.Idle},
		{connectivity.TransientFailure, connectivity.TransientFailure, connectivity.TransientFailure},
		{connectivity.TransientFailure, connectivity.Ready, connectivity.Ready},
	}
	for _, s := range steps {
		lbtest.Report(t, w, "a", s.a)
		lbtest.Report(t, w, "b", s.b)
		lbtest.Eq(t, fmt.Sprintf("state with %v and %v", s.a, s.b), w.State(), s.want)
	}
	lbtest.Eq(t, "pick in READY", lbtest.InUse(t, w), "b")
	lbtest.Report(t, w, "b", connectivity.TransientFailure)
	if c := lbtest.InUse(t, w); c != "a" && c != "b" {
		t.Fatalf("pick in TRANSIENT_FAILURE = %s, want a child's error", c)
	}
}

// TestWeightedTarget_EndpointsSplitByPath verifies A56, Hierarchical
// Addresses, as weighted_target applies it: each child receives the
// endpoints whose path starts with its name.
func TestWeightedTarget_EndpointsSplitByPath(t *testing.T) {
	w := newWorld(t, 1)
	targets := []tgt{{name: "a", weight: 1}, {name: "b", weight: 1}}
	push(t, w, config(targets...), targets...)
	lbtest.Eq(t, "a", lbtest.Kids["a"].Addrs, []string{"198.18.0.1:443"})
	lbtest.Eq(t, "b", lbtest.Kids["b"].Addrs, []string{"198.18.0.2:443"})
}

// TestWeightedTarget_ConfigUpdate_OneReport verifies that a config update
// whose children all report during it gives the channel one state, after
// every child has been updated.
func TestWeightedTarget_ConfigUpdate_OneReport(t *testing.T) {
	w := newWorld(t, 1)
	targets := []tgt{{"a", 1, "TRANSIENT_FAILURE"}, {"b", 1, "READY"}}
	from := len(w.Events())
	push(t, w, config(targets...), targets...)
	lbtest.Eq(t, "states", lbtest.ReportedStates(w, from), []string{"READY"})
}

// TestWeightedTarget_RemovedTarget_Cached15Minutes verifies A28, Weighted
// target LB policy: a removed child is kept for 15 minutes; re-added in that
// time it is the same child; otherwise it is closed when the time is up.
func TestWeightedTarget_RemovedTarget_Cached15Minutes(t *testing.T) {
	w := newWorld(t, 1)
	ab := []tgt{{"a", 1, "READY"}, {"b", 1, "READY"}}
	a := ab[:1]
	push(t, w, config(ab...), ab...)
	push(t, w, config(a...), a...)
	b := lbtest.Kids["b"]
	lbtest.Eq(t, "b closed at once", b.Closed, false)
	for i := 0; i < 20; i++ {
		if c := lbtest.InUse(t, w); c != "a" {
			t.Fatalf("removed target %s picked", c)
		}
	}
	w.Advance(10 * time.Minute)
	push(t, w, config(ab...), ab...)
	lbtest.Eq(t, "builds after re-adding", lbtest.Builds, map[string]int{"a": 1, "b": 1})
	push(t, w, config(a...), a...)
	w.Advance(15*time.Minute - 1)
	lbtest.Eq(t, "b closed before 15m", b.Closed, false)
	w.Advance(1)
	lbtest.Eq(t, "b closed at 15m", b.Closed, true)
	var tm []string
	for _, e := range w.Events() {
		if e.Timer == purposeCache {
			tm = append(tm, fmt.Sprintf("%s@%v", e.Kind, e.T))
		}
	}
	lbtest.Eq(t, "cache timers", tm, []string{
		string(trace.KindTimerStart) + "@0s", string(trace.KindTimerStop) + "@10m0s",
		string(trace.KindTimerStart) + "@10m0s", string(trace.KindTimerFire) + "@25m0s"})
}

// TestWeightedTarget_ParseConfig verifies the config of A28, Weighted target
// LB policy: both JSON spellings of child_policy, and positive weights.
func TestWeightedTarget_ParseConfig(t *testing.T) {
	cfg, err := parseConfig([]byte(`{"targets": {"x": {"weight": 2, "childPolicy": [{"nope": {}}, {"` + lbtest.ScriptedName + `": {"id": "x"}}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	lbtest.Eq(t, "x", []any{cfg.targets["x"].weight, cfg.targets["x"].policy}, []any{2, lbtest.ScriptedName})
	for _, js := range []string{
		`{"targets": {"x": {"weight": 0, "child_policy": [{"` + lbtest.ScriptedName + `": {}}]}}}`,
		`{"targets": {"x": {"child_policy": [{"` + lbtest.ScriptedName + `": {}}]}}}`,
		`{"targets": {"x": {"weight": 1, "child_policy": [{"nope": {}}]}}}`,
	} {
		if _, err := parseConfig([]byte(js)); err == nil {
			t.Errorf("parseConfig(%s) accepted", js)
		}
	}
}
