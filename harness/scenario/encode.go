package scenario

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Encode writes s in the YAML form that Decode reads. Fields left at their
// zero value are left out. Decode(Encode(s)) equals s for a valid s.
func Encode(s *Scenario) ([]byte, error) {
	n, err := toNode(s)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// toNode builds the YAML tree of s, keys in a fixed order.
func toNode(s *Scenario) (*yaml.Node, error) {
	m := &mapping{}
	m.str("name", s.Name)
	m.str("description", s.Description)
	if len(s.Backends) > 0 {
		seq := seqNode()
		for _, b := range s.Backends {
			bm := &mapping{flow: true}
			bm.str("name", b.Name)
			bm.str("stack", string(b.Stack))
			seq.Content = append(seq.Content, bm.node())
		}
		m.add("backends", seq)
	}
	if c := clientNode(s.Client); len(c.Content) > 0 {
		m.add("client", c)
	}
	if len(s.Steps) > 0 {
		seq := seqNode()
		for i, st := range s.Steps {
			sn, err := stepNode(st)
			if err != nil {
				return nil, fmt.Errorf("steps[%d]: %w", i, err)
			}
			seq.Content = append(seq.Content, sn)
		}
		m.add("steps", seq)
	}
	m.dur("end", s.End)
	return m.node(), nil
}

func clientNode(c Client) *yaml.Node {
	m := &mapping{}
	m.str("target", c.Target)
	m.str("listener", c.Listener)
	m.str("lb_policy", c.LBPolicy)
	m.str("lb_config", c.LBConfig)
	m.str("service_config", c.ServiceConfig)
	m.strMap("env", c.Env)
	return m.node()
}

func stepNode(st Step) (*yaml.Node, error) {
	if st.Action == nil {
		return nil, fmt.Errorf("no action")
	}
	m := &mapping{}
	if st.After != nil {
		m.add("after", condNode(*st.After))
		m.dur("delay", st.Delay)
	} else {
		m.add("at", scalar("!!str", st.At.String()))
	}
	a, err := actionNode(st.Action)
	if err != nil {
		return nil, err
	}
	m.add(string(st.Action.Kind()), a)
	return m.node(), nil
}

func actionNode(a Action) (*yaml.Node, error) {
	m := &mapping{flow: true}
	switch a := a.(type) {
	case ResolverUpdate:
		return resolveNode(a), nil
	case SetFault:
		m.add("addr", scalar("!!str", string(a.Addr)))
		m.add("type", scalar("!!str", string(a.Fault)))
	case ClearFault:
		m.add("addr", scalar("!!str", string(a.Addr)))
	case BackendDown:
		m.add("backend", scalar("!!str", a.Backend))
	case BackendUp:
		m.add("backend", scalar("!!str", a.Backend))
	case StartRPC:
		m.add("id", scalar("!!str", a.ID))
		m.dur("deadline", a.Deadline)
		if a.WaitForReady {
			m.add("wait_for_ready", scalar("!!bool", "true"))
		}
		m.strMap("metadata", a.Metadata)
	case WaitFor:
		m.flow = false
		m.add("event", condNode(a.Cond))
		m.add("timeout", scalar("!!str", a.Timeout.String()))
	case EndRun:
	case SetHealth:
		m.add("addr", scalar("!!str", string(a.Addr)))
		m.add("status", scalar("!!str", a.Status))
	case ResolverError:
		m.add("err", scalar("!!str", a.Err))
	case XDSResources:
		return xdsNode(a), nil
	case SetConfig:
		m.flow = false
		m.str("lb_policy", a.LBPolicy)
		m.str("lb_config", a.LBConfig)
		m.str("service_config", a.ServiceConfig)
	default:
		return nil, fmt.Errorf("unknown action %T", a)
	}
	return m.node(), nil
}

func resolveNode(u ResolverUpdate) *yaml.Node {
	seq := seqNode()
	for _, ep := range u.Endpoints {
		em := &mapping{flow: true}
		addrs := seqNode()
		addrs.Style = yaml.FlowStyle
		for _, a := range ep.Addrs {
			addrs.Content = append(addrs.Content, scalar("!!str", string(a)))
		}
		em.add("addrs", addrs)
		em.strMap("attrs", ep.Attrs)
		seq.Content = append(seq.Content, em.node())
	}
	m := &mapping{}
	m.add("endpoints", seq)
	return m.node()
}

func condNode(c Cond) *yaml.Node {
	m := &mapping{flow: true}
	m.add("kind", scalar("!!str", c.Kind))
	m.str("state", c.State)
	m.str("addr", string(c.Addr))
	m.str("rpc", c.RPC)
	m.str("code", c.Code)
	m.str("timer", c.Timer)
	m.str("policy", c.Policy)
	m.str("xds", c.XDS)
	m.str("type", c.Type)
	if c.Count != 0 {
		m.add("count", scalar("!!int", strconv.Itoa(c.Count)))
	}
	return m.node()
}

// mapping accumulates the key/value pairs of a YAML mapping in order.
type mapping struct {
	flow    bool
	content []*yaml.Node
}

func (m *mapping) add(key string, v *yaml.Node) {
	m.content = append(m.content, scalar("!!str", key), v)
}

// str adds key unless v is empty.
func (m *mapping) str(key, v string) {
	if v != "" {
		m.add(key, scalar("!!str", v))
	}
}

// dur adds key unless d is zero.
func (m *mapping) dur(key string, d time.Duration) {
	if d != 0 {
		m.add(key, scalar("!!str", d.String()))
	}
}

// strMap adds key with the entries of v sorted by key, unless v is empty.
func (m *mapping) strMap(key string, v map[string]string) {
	if len(v) == 0 {
		return
	}
	sub := &mapping{flow: true}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		sub.add(k, scalar("!!str", v[k]))
	}
	m.add(key, sub.node())
}

func (m *mapping) node() *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: m.content}
	if m.flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

func seqNode() *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
}

func scalar(tag, v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}
