package client

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func graph(edges map[string][]string) lookup {
	return func(name string) (*Cluster, bool, error) {
		children, ok := edges[name]
		if !ok {
			return nil, false, nil
		}
		if children == nil {
			return &Cluster{Name: name, Kind: KindEDS}, true, nil
		}
		return &Cluster{Name: name, Kind: KindAggregate, Children: children}, true, nil
	}
}

// TestWalk_A37Graphs verifies A37's resolution: depth-first order, each
// cluster once at its earliest position (diamonds), cycles contributing
// nothing, missing clusters leaving the graph incomplete but subscribed.
func TestWalk_A37Graphs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edges    map[string][]string
		leaves   []string
		reached  []string
		complete bool
		err      string
	}{
		{"leaf root", map[string][]string{"A": nil}, []string{"A"}, []string{"A"}, true, ""},
		{"nested", map[string][]string{"A": {"B", "C"}, "B": nil, "C": {"D", "E"}, "D": nil, "E": nil},
			[]string{"B", "D", "E"}, []string{"A", "B", "C", "D", "E"}, true, ""},
		{"diamond", map[string][]string{"A": {"B", "C"}, "B": {"D", "E"}, "C": {"E", "D", "F"}, "D": nil, "E": nil, "F": nil},
			[]string{"D", "E", "F"}, []string{"A", "B", "D", "E", "C", "F"}, true, ""},
		{"cycle with a leaf", map[string][]string{"A": {"B"}, "B": {"A", "C"}, "C": nil},
			[]string{"C"}, []string{"A", "B", "C"}, true, ""},
		{"cycle without a leaf", map[string][]string{"A": {"B"}, "B": {"A"}},
			nil, []string{"A", "B"}, true, "no leaf clusters"},
		{"missing child", map[string][]string{"A": {"B", "C"}, "C": nil},
			[]string{"C"}, []string{"A", "B", "C"}, false, ""},
	} {
		leaves, reached, complete, err := walk("A", graph(tc.edges))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(leaves, tc.leaves) || !reflect.DeepEqual(reached, tc.reached) || complete != tc.complete {
			t.Errorf("%s: got leaves %v reached %v complete %v err %v, want %v %v %v", tc.name, leaves, reached, complete, err, tc.leaves, tc.reached, tc.complete)
		}
	}
}

// TestWalk_DepthLimit verifies A37's depth limit of 16: the route's cluster
// is depth 0, a leaf at depth 15 is fine, one at depth 16 is an error even
// when a shallower branch has leaves.
func TestWalk_DepthLimit(t *testing.T) {
	chain := func(n int) map[string][]string {
		m := map[string][]string{}
		for i := range n {
			m[fmt.Sprint("a", i)] = []string{fmt.Sprint("a", i+1)}
		}
		m[fmt.Sprint("a", n)] = nil
		return m
	}
	walkFrom := func(m map[string][]string) ([]string, error) {
		l, _, _, err := walk("a0", graph(m))
		return l, err
	}
	if l, err := walkFrom(chain(15)); err != nil || !reflect.DeepEqual(l, []string{"a15"}) {
		t.Errorf("depth 15: leaves %v err %v", l, err)
	}
	m := chain(16)
	m["a0"] = []string{"leaf", "a1"}
	m["leaf"] = nil
	if _, err := walkFrom(m); err == nil || !strings.Contains(err.Error(), "depth limit of 16") {
		t.Errorf("depth 16: err = %v, want the depth limit", err)
	}
}
