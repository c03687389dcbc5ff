package form

import (
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Mapping accumulates the key/value pairs of a YAML mapping in order; Flow
// writes it on one line.
type Mapping struct {
	Flow    bool
	content []*yaml.Node
}

// Add adds key with value v.
func (m *Mapping) Add(key string, v *yaml.Node) {
	m.content = append(m.content, Scalar("!!str", key), v)
}

// Str adds key unless v is empty.
func (m *Mapping) Str(key, v string) {
	if v != "" {
		m.Add(key, Scalar("!!str", v))
	}
}

// Dur adds key unless d is zero.
func (m *Mapping) Dur(key string, d time.Duration) {
	if d != 0 {
		m.Add(key, Scalar("!!str", d.String()))
	}
}

// Uint adds key unless v is zero.
func (m *Mapping) Uint(key string, v uint64) {
	if v != 0 {
		m.Add(key, Scalar("!!int", strconv.FormatUint(v, 10)))
	}
}

// StrMap adds key with the entries of v sorted by key, unless v is empty.
func (m *Mapping) StrMap(key string, v map[string]string) {
	if len(v) == 0 {
		return
	}
	sub := &Mapping{Flow: true}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		sub.Add(k, Scalar("!!str", v[k]))
	}
	m.Add(key, sub.Node())
}

// Node is the mapping's node.
func (m *Mapping) Node() *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: m.content}
	if m.Flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

// Seq is an empty sequence node.
func Seq() *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
}

// Scalar is a scalar node of tag ("!!str", "!!int", "!!bool") and value v.
func Scalar(tag, v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}

// FlowStrs is a one-line sequence of strings.
func FlowStrs(xs []string) *yaml.Node {
	seq := Seq()
	seq.Style = yaml.FlowStyle
	for _, x := range xs {
		seq.Content = append(seq.Content, Scalar("!!str", x))
	}
	return seq
}
