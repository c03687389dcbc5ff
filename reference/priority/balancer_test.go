package priority

import (
	"testing"

	"github.com/conformlab/conform/reference/internal/lbtest"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

var revisions = []string{"seed", "latest"}

// TestPriority_LazyCreation_OnlyFirstChildAndItsFailoverTimer verifies A56,
// Child Lifetime Management: children are created only when the choice
// needs them, and a new child starts its 10 s failover timer.
func TestPriority_LazyCreation_OnlyFirstChildAndItsFailoverTimer(t *testing.T) {
	w := newWorld(t)
	lbtest.Push(t, w, config("seed", names("p0", "p1", "p2")...), "p0", "p1", "p2")
	lbtest.Eq(t, "builds", lbtest.Builds, map[string]int{"p0": 1})
	lbtest.Eq(t, "p0 addresses", lbtest.Kids["p0"].Addrs, []string{"198.18.0.1:443"})
	lbtest.Eq(t, "failover timers", timers(w, "failover"), []string{"start 10s @0s"})
	lbtest.Eq(t, "state", w.State(), connectivity.Connecting)
}

// TestPriority_FailoverTimer_NextPriorityAfter10s verifies A56, Child
// Connectivity State Tracking: a child still connecting after 10 s makes the
// choice move on to the next priority, in both revisions.
func TestPriority_FailoverTimer_NextPriorityAfter10s(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			w := newWorld(t)
			lbtest.Push(t, w, config(rev, names("p0", "p1")...), "p0", "p1")
			lbtest.Report(t, w, "p0", connectivity.Connecting)
			w.Advance(10*sec - 1)
			lbtest.Eq(t, "builds before 10s", lbtest.Builds, map[string]int{"p0": 1})
			lbtest.Eq(t, "in use before 10s", lbtest.InUse(t, w), "p0")
			w.Advance(1)
			lbtest.Eq(t, "builds at 10s", lbtest.Builds, map[string]int{"p0": 1, "p1": 1})
			lbtest.Eq(t, "failover timers", timers(w, "failover"), []string{"start 10s @0s", "fire @10s", "start 10s @10s"})
			lbtest.Eq(t, "in use at 10s (p1 has not reported)", lbtest.InUse(t, w), "queued")
			lbtest.Report(t, w, "p1", connectivity.Connecting)
			lbtest.Eq(t, "in use at 10s", lbtest.InUse(t, w), "p1")
		})
	}
}

// TestPriority_TransientFailure_FailsOverAtOnce verifies A56, Child
// Connectivity State Tracking and Algorithm for Choosing a Priority: a child
// reporting TRANSIENT_FAILURE cancels its failover timer and the next
// priority is used at once.
func TestPriority_TransientFailure_FailsOverAtOnce(t *testing.T) {
	w := newWorld(t)
	lbtest.Push(t, w, config("seed", names("p0", "p1")...), "p0", "p1")
	w.Advance(3 * sec)
	lbtest.Report(t, w, "p0", connectivity.TransientFailure)
	lbtest.Eq(t, "failover timers", timers(w, "failover"), []string{"start 10s @0s", "stop @3s", "start 10s @3s"})
	lbtest.Eq(t, "builds", lbtest.Builds, map[string]int{"p0": 1, "p1": 1})
	lbtest.Report(t, w, "p1", connectivity.Ready)
	lbtest.Eq(t, "state", w.State(), connectivity.Ready)
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "p1")
}

// TestPriority_HigherPriorityReady_ReturnsAndDeactivatesLower verifies A56,
// Child Lifetime Management: when a higher priority becomes READY it is used
// again, and the lower child is deactivated with a 15-minute timer, then
// destroyed when it fires.
func TestPriority_HigherPriorityReady_ReturnsAndDeactivatesLower(t *testing.T) {
	w := newWorld(t)
	lbtest.Push(t, w, config("seed", names("p0", "p1")...), "p0", "p1")
	lbtest.Report(t, w, "p0", connectivity.TransientFailure)
	lbtest.Report(t, w, "p1", connectivity.Ready)
	w.Advance(sec)
	lbtest.Report(t, w, "p0", connectivity.Ready)
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "p0")
	lbtest.Eq(t, "deactivation timers", timers(w, "deactivation"), []string{"start 15m0s @1s"})
	w.Advance(15*minute - 1)
	if lbtest.Kids["p1"].Closed {
		t.Fatal("p1 destroyed before its deactivation timer fired")
	}
	w.Advance(1)
	if !lbtest.Kids["p1"].Closed {
		t.Fatal("p1 not destroyed when its deactivation timer fired")
	}
	lbtest.Eq(t, "deactivation timers", timers(w, "deactivation"), []string{"start 15m0s @1s", "fire @15m1s"})
}

// TestPriority_Reactivation_CancelsDeactivation verifies A56, Child Lifetime
// Management: if the higher priority fails before the lower child is
// destroyed, the lower child is used again and its timer is cancelled; it is
// the same child, not a new one.
func TestPriority_Reactivation_CancelsDeactivation(t *testing.T) {
	w := newWorld(t)
	lbtest.Push(t, w, config("seed", names("p0", "p1")...), "p0", "p1")
	lbtest.Report(t, w, "p0", connectivity.TransientFailure)
	lbtest.Report(t, w, "p1", connectivity.Ready)
	lbtest.Report(t, w, "p0", connectivity.Ready)
	w.Advance(5 * minute)
	lbtest.Report(t, w, "p0", connectivity.TransientFailure)
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "p1")
	lbtest.Eq(t, "deactivation timers", timers(w, "deactivation"), []string{"start 15m0s @0s", "stop @5m0s"})
	w.Advance(time30m)
	if lbtest.Kids["p1"].Closed {
		t.Fatal("reactivated child destroyed")
	}
	lbtest.Eq(t, "builds", lbtest.Builds, map[string]int{"p0": 1, "p1": 1})
}

const time30m = 30 * minute

// TestPriority_RepeatedConnecting_SeedRestartsLatestIgnores verifies where
// the revisions of A56 differ, Child Connectivity State Tracking: after
// READY, a CONNECTING report starts the failover timer; a second CONNECTING
// 5 s later restarts it under the seed text ("reports CONNECTING") and is
// ignored under the latest ("transitions to CONNECTING").
func TestPriority_RepeatedConnecting_SeedRestartsLatestIgnores(t *testing.T) {
	want := map[string][]string{
		"seed":   {"start 10s @0s", "stop @1s", "start 10s @2s", "stop @7s", "start 10s @7s", "fire @17s"},
		"latest": {"start 10s @0s", "stop @1s", "start 10s @2s", "fire @12s"},
	}
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			w := newWorld(t)
			lbtest.Push(t, w, config(rev, names("p0", "p1")...), "p0", "p1")
			w.Advance(sec)
			lbtest.Report(t, w, "p0", connectivity.Ready)
			w.Advance(sec)
			lbtest.Report(t, w, "p0", connectivity.Connecting)
			w.Advance(5 * sec)
			lbtest.Report(t, w, "p0", connectivity.Connecting)
			w.Advance(time30m)
			lbtest.Eq(t, "p0 failover timers", timers(w, "failover")[:len(want[rev])], want[rev])
		})
	}
}

// TestPriority_FailoverTimerFired_SeedTreatsAsTFLatestRechooses verifies
// where the revisions of A56 differ on the timer's expiry: with both
// children stuck CONNECTING past their timers, the seed text treats them as
// TRANSIENT_FAILURE and delegates to the last child in TRANSIENT_FAILURE;
// the latest re-runs the choice, which finds p0 still CONNECTING.
func TestPriority_FailoverTimerFired_SeedTreatsAsTFLatestRechooses(t *testing.T) {
	want := map[string]struct {
		inUse string
		state connectivity.State
	}{
		"seed":   {"p1", connectivity.TransientFailure},
		"latest": {"p0", connectivity.Connecting},
	}
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			w := newWorld(t)
			lbtest.Push(t, w, config(rev, names("p0", "p1")...), "p0", "p1")
			lbtest.Report(t, w, "p0", connectivity.Connecting)
			w.Advance(10 * sec)
			lbtest.Report(t, w, "p1", connectivity.Connecting)
			w.Advance(10 * sec)
			lbtest.Eq(t, "failover timers", timers(w, "failover"), []string{"start 10s @0s", "fire @10s", "start 10s @10s", "fire @20s"})
			lbtest.Eq(t, "state", w.State(), want[rev].state)
			lbtest.Eq(t, "in use", lbtest.InUse(t, w), want[rev].inUse)
		})
	}
}

// TestPriority_ConfigUpdate_ChoosesOnceAfterAllChildren verifies A56,
// Configuration Updates: child reports caused by a config update do not run
// the choice until every child has been updated. Here the lower child in
// use ("a", updated first) reports TRANSIENT_FAILURE and the higher ("z")
// READY: a choice between the two would report TRANSIENT_FAILURE first.
func TestPriority_ConfigUpdate_ChoosesOnceAfterAllChildren(t *testing.T) {
	w := newWorld(t)
	lbtest.Push(t, w, config("seed", names("z", "a")...), "z", "a")
	lbtest.Report(t, w, "z", connectivity.TransientFailure)
	lbtest.Report(t, w, "a", connectivity.Ready)
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "a")
	from := len(w.Events())
	lbtest.Push(t, w, config("seed", kid{"z", "READY"}, kid{"a", "TRANSIENT_FAILURE"}), "z", "a")
	lbtest.Eq(t, "states reported for the update", lbtest.ReportedStates(w, from), []string{"READY"})
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "z")
	lbtest.Eq(t, "updates", []int{lbtest.Kids["z"].Updates, lbtest.Kids["a"].Updates}, []int{2, 2})
}

// TestPriority_EmptyPriorities_TransientFailure verifies A56, Algorithm for
// Choosing a Priority: an empty priority list reports TRANSIENT_FAILURE,
// and RPCs fail with UNAVAILABLE.
func TestPriority_EmptyPriorities_TransientFailure(t *testing.T) {
	w := newWorld(t)
	lbtest.Push(t, w, `{"children": {}, "priorities": []}`)
	lbtest.Eq(t, "state", w.State(), connectivity.TransientFailure)
	lbtest.Eq(t, "rpc", lbtest.InUse(t, w), "error: UNAVAILABLE: "+errEmptyPriorities.Error())
}

// TestPriority_RemovedChild_SeedCachesLatestRemoves verifies A56, Child
// Lifetime Management (seed: a child removed from the config is deactivated
// for 15 minutes, and re-adding it by name updates it without reactivating
// it) against A115 (latest: it is removed at once).
func TestPriority_RemovedChild_SeedCachesLatestRemoves(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			w := newWorld(t)
			lbtest.Push(t, w, config(rev, names("p0", "p1")...), "p0", "p1")
			lbtest.Report(t, w, "p0", connectivity.TransientFailure)
			lbtest.Report(t, w, "p1", connectivity.Ready)
			w.Advance(sec)
			lbtest.Push(t, w, config(rev, names("p1")...), "p1")
			lbtest.Eq(t, "in use", lbtest.InUse(t, w), "p1")
			p0 := lbtest.Kids["p0"]
			if rev == "latest" {
				lbtest.Eq(t, "p0 closed at once", p0.Closed, true)
				lbtest.Eq(t, "deactivation timers", timers(w, "deactivation"), []string(nil))
				return
			}
			lbtest.Eq(t, "p0 closed at once", p0.Closed, false)
			lbtest.Eq(t, "deactivation timers", timers(w, "deactivation"), []string{"start 15m0s @1s"})
			w.Advance(minute)
			lbtest.Push(t, w, config(rev, names("p1", "p0")...), "p1", "p0")
			lbtest.Eq(t, "p0 updates (re-added: updated)", p0.Updates, 2)
			lbtest.Eq(t, "deactivation timers (not reactivated)", timers(w, "deactivation"), []string{"start 15m0s @1s"})
			w.Advance(14 * minute)
			lbtest.Eq(t, "p0 closed after 15m", p0.Closed, true)
			lbtest.Eq(t, "builds", lbtest.Builds, map[string]int{"p0": 1, "p1": 1})
		})
	}
}

// TestPriority_IgnoreReresolutionRequests verifies A56, LB Policy
// Configuration (from A37): re-resolution requests of a child marked
// ignore_reresolution_requests are dropped; others reach the channel.
func TestPriority_IgnoreReresolutionRequests(t *testing.T) {
	w := newWorld(t)
	cfg := `{"children": {
		"p0": {"config": [{"` + lbtest.ScriptedName + `": {"id": "p0"}}], "ignore_reresolution_requests": true},
		"p1": {"config": [{"` + lbtest.ScriptedName + `": {"id": "p1"}}]}},
		"priorities": ["p0", "p1"]}`
	lbtest.Push(t, w, cfg, "p0", "p1")
	lbtest.Report(t, w, "p0", connectivity.TransientFailure)
	lbtest.Kids["p0"].CC.ResolveNow(resolverNow)
	lbtest.Eq(t, "after p0 asked", w.ResolveNowCount(), 0)
	lbtest.Kids["p1"].CC.ResolveNow(resolverNow)
	lbtest.Eq(t, "after p1 asked", w.ResolveNowCount(), 1)
}

// TestPriority_ParseConfig_Rejects verifies the config checks of A56, LB
// Policy Configuration (names tie priorities to children) and of the
// revision extension.
func TestPriority_ParseConfig_Rejects(t *testing.T) {
	for _, js := range []string{
		`{"children": {}, "priorities": ["p0"]}`,
		`{"children": {"p0": {"config": [{"` + lbtest.ScriptedName + `": {}}]}}, "priorities": []}`,
		`{"children": {"p0": {"config": [{"` + lbtest.ScriptedName + `": {}}]}}, "priorities": ["p0", "p0"]}`,
		`{"children": {"p0": {"config": [{"no_such_policy": {}}]}}, "priorities": ["p0"]}`,
		`{"children": {}, "priorities": [], "revision": "2021"}`,
	} {
		if _, err := parseConfig([]byte(js)); err == nil {
			t.Errorf("parseConfig(%s) accepted", js)
		}
	}
	cfg, err := parseConfig([]byte(`{"children": {"p0": {"config": [{"no_such_policy": {}}, {"` + lbtest.ScriptedName + `": {"id": "x"}}], "ignoreReresolutionRequests": true}}, "priorities": ["p0"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.children["p0"]
	lbtest.Eq(t, "child", []any{c.policy, c.config.(*lbtest.ScriptedConfig).ID, c.ignoreReresolution}, []any{lbtest.ScriptedName, "x", true})
	lbtest.Eq(t, "revision", cfg.revision, revisionSeed)
}

var resolverNow = resolver.ResolveNowOptions{}

// TestPriority_ChildPolicyChange_SwitchesGracefully verifies L9, Swapping
// out balancer, for a priority child whose config names another policy (a
// cluster's LB policy changed through CDS): the old policy keeps serving,
// READY, while the new one connects; the new one's first READY takes over
// and closes the old one. The child keeps its name and is not rebuilt.
func TestPriority_ChildPolicyChange_SwitchesGracefully(t *testing.T) {
	w := newWorld(t)
	lbtest.Push(t, w, config("latest", kid{"p0", "READY"}), "p0")
	old := lbtest.Kids["p0"]
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "p0")
	from := len(w.Events())
	alt := `{"children":{"p0":{"config":[{"` + lbtest.ScriptedAltName + `":{"id":"p0-new","onUpdate":"CONNECTING"}}]}},"priorities":["p0"],"revision":"latest"}`
	lbtest.Push(t, w, alt, "p0")
	lbtest.Eq(t, "states reported while the new policy connects", lbtest.ReportedStates(w, from), []string(nil))
	lbtest.Eq(t, "old policy closed", old.Closed, false)
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "p0")
	lbtest.Report(t, w, "p0-new", connectivity.Ready)
	lbtest.Eq(t, "old policy closed", old.Closed, true)
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "p0-new")
	lbtest.Eq(t, "states reported", lbtest.ReportedStates(w, from), []string{"READY"})
}
