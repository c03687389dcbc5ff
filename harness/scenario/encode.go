package scenario

import (
	"bytes"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/conformlab/conform/harness/scenario/internal/form"
	"github.com/conformlab/conform/harness/scenario/xds"
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
	m := &form.Mapping{}
	m.Str("name", s.Name)
	m.Str("description", s.Description)
	if len(s.Backends) > 0 {
		seq := form.Seq()
		for _, b := range s.Backends {
			bm := &form.Mapping{Flow: true}
			bm.Str("name", b.Name)
			bm.Str("stack", string(b.Stack))
			seq.Content = append(seq.Content, bm.Node())
		}
		m.Add("backends", seq)
	}
	if c := clientNode(s.Client); len(c.Content) > 0 {
		m.Add("client", c)
	}
	if len(s.Steps) > 0 {
		seq := form.Seq()
		for i, st := range s.Steps {
			sn, err := stepNode(st)
			if err != nil {
				return nil, fmt.Errorf("steps[%d]: %w", i, err)
			}
			seq.Content = append(seq.Content, sn)
		}
		m.Add("steps", seq)
	}
	m.Dur("end", s.End)
	return m.Node(), nil
}

func clientNode(c Client) *yaml.Node {
	m := &form.Mapping{}
	m.Str("target", c.Target)
	m.Str("listener", c.Listener)
	m.Str("lb_policy", c.LBPolicy)
	m.Str("lb_config", c.LBConfig)
	m.Str("service_config", c.ServiceConfig)
	m.StrMap("env", c.Env)
	m.Dur("idle_timeout", c.IdleTimeout)
	return m.Node()
}

func stepNode(st Step) (*yaml.Node, error) {
	if st.Action == nil {
		return nil, fmt.Errorf("no action")
	}
	m := &form.Mapping{}
	if st.After != nil {
		m.Add("after", condNode(*st.After))
		m.Dur("delay", st.Delay)
	} else {
		m.Add("at", form.Scalar("!!str", st.At.String()))
	}
	a, err := actionNode(st.Action)
	if err != nil {
		return nil, err
	}
	m.Add(string(st.Action.Kind()), a)
	return m.Node(), nil
}

func actionNode(a Action) (*yaml.Node, error) {
	m := &form.Mapping{Flow: true}
	switch a := a.(type) {
	case ResolverUpdate:
		return resolveNode(a), nil
	case SetFault:
		m.Add("addr", form.Scalar("!!str", string(a.Addr)))
		m.Add("type", form.Scalar("!!str", string(a.Fault)))
		if a.Code != "" {
			m.Add("code", form.Scalar("!!str", a.Code))
		}
	case ClearFault:
		m.Add("addr", form.Scalar("!!str", string(a.Addr)))
	case BackendDown:
		m.Add("backend", form.Scalar("!!str", a.Backend))
	case BackendUp:
		m.Add("backend", form.Scalar("!!str", a.Backend))
	case StartRPC:
		m.Add("id", form.Scalar("!!str", a.ID))
		m.Dur("deadline", a.Deadline)
		if a.WaitForReady {
			m.Add("wait_for_ready", form.Scalar("!!bool", "true"))
		}
		m.StrMap("metadata", a.Metadata)
	case WaitFor:
		m.Flow = false
		m.Add("event", condNode(a.Cond))
		m.Add("timeout", form.Scalar("!!str", a.Timeout.String()))
	case EndRun:
	case SetHealth:
		m.Add("addr", form.Scalar("!!str", string(a.Addr)))
		m.Str("service", a.Service)
		m.Add("status", form.Scalar("!!str", a.Status))
	case ResolverError:
		m.Add("err", form.Scalar("!!str", a.Err))
	case SetXDS:
		return xds.Encode(a.Resources), nil
	case SetConfig:
		m.Flow = false
		m.Str("lb_policy", a.LBPolicy)
		m.Str("lb_config", a.LBConfig)
		m.Str("service_config", a.ServiceConfig)
	default:
		return nil, fmt.Errorf("unknown action %T", a)
	}
	return m.Node(), nil
}

func resolveNode(u ResolverUpdate) *yaml.Node {
	seq := form.Seq()
	for _, ep := range u.Endpoints {
		em := &form.Mapping{Flow: true}
		addrs := form.Seq()
		addrs.Style = yaml.FlowStyle
		for _, a := range ep.Addrs {
			addrs.Content = append(addrs.Content, form.Scalar("!!str", string(a)))
		}
		em.Add("addrs", addrs)
		em.StrMap("attrs", ep.Attrs)
		seq.Content = append(seq.Content, em.Node())
	}
	m := &form.Mapping{}
	m.Add("endpoints", seq)
	return m.Node()
}

func condNode(c Cond) *yaml.Node {
	m := &form.Mapping{Flow: true}
	m.Add("kind", form.Scalar("!!str", c.Kind))
	m.Str("state", c.State)
	m.Str("addr", string(c.Addr))
	m.Str("backend", c.Backend)
	m.Str("rpc", c.RPC)
	m.Str("code", c.Code)
	m.Str("timer", c.Timer)
	m.Str("policy", c.Policy)
	m.Str("xds", c.XDS)
	m.Str("type", c.Type)
	if c.Count != 0 {
		m.Add("count", form.Scalar("!!int", strconv.Itoa(c.Count)))
	}
	return m.Node()
}
