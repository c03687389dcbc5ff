package a75

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
)

// The LB policy tree the xDS resolver gives the channel, read from a
// config-update's JSON. Policies are recognised by the end of their name
// (the reference's conform_priority, gRPC's priority_experimental), so the
// reading does not depend on the reference's registry names.

// node is one LoadBalancingConfig object: a policy name and its config.
type node struct {
	name string
	cfg  map[string]any
}

// parseTree reads a config-update's detail: one LoadBalancingConfig object,
// or the root policy's config alone (the simulator records the config of
// the policy it was built with). A root given by its config alone is
// named by its shape: a priority (with "priorities"), or the leaf
// cluster's outlier_detection (A75: the only other root).
func parseTree(g gomega.Gomega, detail string) node {
	var m map[string]any
	g.Expect(json.Unmarshal([]byte(detail), &m)).To(gomega.Succeed(), "config-update detail should be one LB config object: %s", detail)
	if _, ok := m["priorities"]; ok {
		return node{name: "(root) priority", cfg: m}
	}
	if _, ok := m["childPolicy"]; ok {
		return node{name: "(root) outlier_detection", cfg: m}
	}
	n, ok := asNode(m)
	g.Expect(ok).To(gomega.BeTrue(), "config-update detail should name one policy: %s", detail)
	return n
}

func asNode(v any) (node, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return node{}, false
	}
	for k, c := range m {
		cfg, _ := c.(map[string]any)
		return node{name: k, cfg: cfg}, true
	}
	return node{}, false
}

// is reports whether n is the policy whose standard name is std
// ("priority", "round_robin", "pick_first", "weighted_target").
func (n node) is(std string) bool {
	return strings.HasSuffix(strings.TrimSuffix(n.name, "_experimental"), std)
}

// priorities is a priority policy's ordered child names.
func (n node) priorities() []string {
	var out []string
	ps, _ := n.cfg["priorities"].([]any)
	for _, p := range ps {
		s, _ := p.(string)
		out = append(out, s)
	}
	return out
}

// children are the nodes directly under n: a priority's children's first
// configs, a weighted_target's targets' first child policies, and any
// "childPolicy" list's first entry.
func (n node) children() []node {
	var out []node
	first := func(v any) {
		if l, ok := v.([]any); ok && len(l) > 0 {
			if c, ok := asNode(l[0]); ok {
				out = append(out, c)
			}
		}
	}
	first(n.cfg["childPolicy"])
	for _, key := range []string{"children", "targets"} {
		m, _ := n.cfg[key].(map[string]any)
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			c, _ := m[k].(map[string]any)
			first(c["config"])
			first(c["childPolicy"])
		}
	}
	return out
}

// child is the subtree of priority child name.
func (n node) child(g gomega.Gomega, name string) node {
	m, _ := n.cfg["children"].(map[string]any)
	c, _ := m[name].(map[string]any)
	l, _ := c["config"].([]any)
	g.Expect(l).NotTo(gomega.BeEmpty(), "%s should have a child %q", n.name, name)
	sub, ok := asNode(l[0])
	g.Expect(ok).To(gomega.BeTrue(), "child %q of %s should have a config", name, n.name)
	return sub
}

// find returns every node of the tree under and including n for which
// pred holds, depth first.
func (n node) find(pred func(node) bool) []node {
	var out []node
	if pred(n) {
		out = append(out, n)
	}
	for _, c := range n.children() {
		out = append(out, c.find(pred)...)
	}
	return out
}

// endpointPolicies are the names of the policies under weighted_target
// targets in n: the endpoint-picking policy of each locality.
func (n node) endpointPolicies() []string {
	var out []string
	for _, wt := range n.find(func(x node) bool { return x.is("weighted_target") }) {
		for _, c := range wt.children() {
			out = append(out, c.name)
		}
	}
	return out
}

// needsTree marks checks that read the LB policy tree from the channel's
// config-update events, which only the reference's xDS resolver records
// (with its policy's events): a third party's tree is not visible.
var needsTree = []trace.Source{trace.SourcePolicy}

// lastTree is the LB policy tree of tr's last config-update.
func lastTree(g gomega.Gomega, tr *trace.Trace) node {
	cs := configs(tr)
	g.Expect(cs).NotTo(gomega.BeEmpty(), "the channel should have received an LB config from the xDS resolver")
	return parseTree(g, cs[len(cs)-1].Detail)
}

func (n node) String() string {
	b, _ := json.Marshal(map[string]any{n.name: n.cfg})
	return fmt.Sprintf("%s", b)
}
