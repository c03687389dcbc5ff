package priority

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/connectivity"

	"github.com/conformlab/conform/reference/internal/lbtest"
)

// TestPriority_ChildPolicyCache_LatestKeepsRemovedChild verifies A115,
// Temporary environment variable protection: with the revert switch the
// latest revision keeps a child removed from the config for 15 minutes, as
// the seed does, and re-adding it updates the same child.
func TestPriority_ChildPolicyCache_LatestKeepsRemovedChild(t *testing.T) {
	withCache := func(cfg string) string {
		out, err := WithChildPolicyCache(json.RawMessage(`{"` + Name + `":` + cfg + `}`))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		return string(m[Name])
	}
	w := newWorld(t)
	lbtest.Push(t, w, withCache(config("latest", names("p0", "p1")...)), "p0", "p1")
	lbtest.Report(t, w, "p0", connectivity.TransientFailure)
	lbtest.Report(t, w, "p1", connectivity.Ready)
	w.Advance(sec)
	lbtest.Push(t, w, withCache(config("latest", names("p1")...)), "p1")
	p0 := lbtest.Kids["p0"]
	lbtest.Eq(t, "p0 closed at once", p0.Closed, false)
	lbtest.Eq(t, "deactivation timers", timers(w, "deactivation"), []string{"start 15m0s @1s"})
	w.Advance(minute)
	lbtest.Push(t, w, withCache(config("latest", names("p1", "p0")...)), "p1", "p0")
	lbtest.Eq(t, "p0 updates (re-added: updated)", p0.Updates, 2)
	w.Advance(14 * minute)
	lbtest.Eq(t, "p0 closed after 15m", p0.Closed, true)
	lbtest.Eq(t, "builds", lbtest.Builds, map[string]int{"p0": 1, "p1": 1})
}

// TestWithChildPolicyCache_EveryPriorityAtAnyDepth verifies the switch is
// set on every priority config of a tree, and nothing else changes.
func TestWithChildPolicyCache_EveryPriorityAtAnyDepth(t *testing.T) {
	in := `[{"other":{"n":1.5,"childPolicy":[{"` + Name + `":{"priorities":["a"],"children":{"a":{"config":[{"` + Name + `":{"priorities":[]}}]}}}}]}}]`
	want := `[{"other":{"childPolicy":[{"` + Name + `":{"childPolicyCache":true,"children":{"a":{"config":[{"` + Name + `":{"childPolicyCache":true,"priorities":[]}}]}},"priorities":["a"]}}],"n":1.5}}]`
	got, err := WithChildPolicyCache(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	lbtest.Eq(t, "config", string(got), want)
	if _, err := WithChildPolicyCache(json.RawMessage(`{`)); err == nil {
		t.Error("malformed JSON accepted")
	}
}

// TestWithChildPolicyCacheIn sets the option in a named policy's config: in
// the root when it is a priority policy, in nested ones when it is not.
func TestWithChildPolicyCacheIn(t *testing.T) {
	root, err := WithChildPolicyCacheIn(Name, `{"children":{},"priorities":[]}`)
	if err != nil || !strings.Contains(root, `"childPolicyCache":true`) {
		t.Errorf("root priority: %s, %v; want childPolicyCache set", root, err)
	}
	nested := `{"childPolicy":[{"` + Name + `":{"children":{},"priorities":[]}}]}`
	got, err := WithChildPolicyCacheIn("conform_xds_override_host", nested)
	if err != nil || !strings.Contains(got, `"childPolicyCache":true`) || strings.HasPrefix(got, `{"childPolicyCache"`) {
		t.Errorf("nested priority: %s, %v; want childPolicyCache set in the priority only", got, err)
	}
	if _, err := WithChildPolicyCacheIn(Name, `{not json`); err == nil {
		t.Error("a malformed config should be an error")
	}
}
