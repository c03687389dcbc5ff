package priority

import (
	"encoding/json"
	"testing"

	"github.com/conformlab/conform/reference/internal/hierarchy"
	"github.com/conformlab/conform/reference/internal/lbtest"
	_ "github.com/conformlab/conform/reference/weightedtarget" // conform_weighted_target
	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
)

// TestPriority_OverWeightedTarget_PathsReachTheLeaves verifies A56,
// Hierarchical Addresses, with its own example tree (priority over two
// weighted_targets over two localities each): every leaf gets exactly its
// address, and the second priority's leaves exist only after failover.
func TestPriority_OverWeightedTarget_PathsReachTheLeaves(t *testing.T) {
	w := newWorld(t)
	wt := func(l1, l2 string) any {
		leaf := func(id string) any {
			return map[string]any{"weight": 1, "child_policy": []any{map[string]any{lbtest.ScriptedName: map[string]string{"id": id}}}}
		}
		return map[string]any{"config": []any{map[string]any{"conform_weighted_target": map[string]any{
			"targets": map[string]any{l1: leaf(l1), l2: leaf(l2)}}}}}
	}
	js, _ := json.Marshal(map[string]any{
		"children":   map[string]any{"child0": wt("localityA", "localityB"), "child1": wt("localityC", "localityD")},
		"priorities": []string{"child0", "child1"},
	})
	paths := [][]string{{"child0", "localityA"}, {"child0", "localityB"}, {"child1", "localityC"}, {"child1", "localityD"}}
	addrs := []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "10.0.0.4:80"}
	s := resolver.State{Attributes: attributes.New(lbtest.CfgKey{}, string(js))}
	for i, p := range paths {
		s.Endpoints = append(s.Endpoints, hierarchy.SetOnEndpoint(resolver.Endpoint{Addresses: []resolver.Address{{Addr: addrs[i]}}}, p))
	}
	if err := w.Resolve(s); err != nil {
		t.Fatal(err)
	}
	lbtest.Eq(t, "builds", lbtest.Builds, map[string]int{"localityA": 1, "localityB": 1})
	lbtest.Eq(t, "localityA", lbtest.Kids["localityA"].Addrs, addrs[:1])
	lbtest.Eq(t, "localityB", lbtest.Kids["localityB"].Addrs, addrs[1:2])
	lbtest.Report(t, w, "localityA", connectivity.TransientFailure)
	lbtest.Report(t, w, "localityB", connectivity.TransientFailure)
	lbtest.Eq(t, "builds after child0 failed", lbtest.Builds, map[string]int{"localityA": 1, "localityB": 1, "localityC": 1, "localityD": 1})
	lbtest.Eq(t, "localityC", lbtest.Kids["localityC"].Addrs, addrs[2:3])
	lbtest.Eq(t, "localityD", lbtest.Kids["localityD"].Addrs, addrs[3:])
	lbtest.Report(t, w, "localityD", connectivity.Ready)
	lbtest.Eq(t, "in use", lbtest.InUse(t, w), "localityD")
}
