package scenario

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// DecodeFile reads and validates the YAML scenario at path.
func DecodeFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode reads and validates a YAML scenario. Every problem is an *Error
// naming file (as given), line and field.
func Decode(file string, data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Line: 1, Msg: "empty file"}
		}
		return nil, &Error{File: file, Line: yamlErrLine(err), Msg: yamlErrMsg(err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Line: extra.Line, Msg: "more than one YAML document"}
	}
	s, err := decodeNode(&doc)
	return s, placeErr(err, file)
}

// reader reads a scenario's YAML tree with the strict reader both forms
// share (form.Reader), which keeps every field's line for Validate's errors.
type reader struct {
	form.Reader
}

// decodeNode reads a document node into a validated scenario. Errors carry
// lines but no file.
func decodeNode(doc *yaml.Node) (*Scenario, error) {
	r := &reader{}
	root := doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	s, err := r.scenario(root)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Line = r.LineOf(e.Field, root.Line)
		}
		return nil, err
	}
	return s, nil
}

func placeErr(err error, file string) error {
	var e *Error
	if errors.As(err, &e) {
		e.File = file
	}
	return err
}

func (r *reader) scenario(n *yaml.Node) (*Scenario, error) {
	f, err := r.Fields(n, "", "name", "description", "backends", "client", "steps", "end")
	if err != nil {
		return nil, err
	}
	s := &Scenario{}
	if s.Name, err = r.OptStr(f, "", "name"); err != nil {
		return nil, err
	}
	if s.Description, err = r.OptStr(f, "", "description"); err != nil {
		return nil, err
	}
	if v, ok := f["backends"]; ok {
		if s.Backends, err = r.backends(v); err != nil {
			return nil, err
		}
	}
	if v, ok := f["client"]; ok {
		if s.Client, err = r.client(v); err != nil {
			return nil, err
		}
	}
	if v, ok := f["steps"]; ok {
		if s.Steps, err = r.steps(v); err != nil {
			return nil, err
		}
	}
	if v, ok := f["end"]; ok {
		if s.End, err = r.Duration(v, "end"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (r *reader) backends(n *yaml.Node) ([]Backend, error) {
	items, err := r.Items(n, "backends")
	if err != nil {
		return nil, err
	}
	var out []Backend
	for i, it := range items {
		p := form.Index("backends", i)
		f, err := r.Fields(it, p, "name", "stack")
		if err != nil {
			return nil, err
		}
		var b Backend
		if b.Name, err = r.OptStr(f, p, "name"); err != nil {
			return nil, err
		}
		stack, err := r.OptStr(f, p, "stack")
		if err != nil {
			return nil, err
		}
		b.Stack = Stack(stack)
		out = append(out, b)
	}
	return out, nil
}

func (r *reader) client(n *yaml.Node) (Client, error) {
	var c Client
	f, err := r.Fields(n, "client", "target", "listener", "lb_policy", "lb_config", "service_config", "env", "idle_timeout")
	if err != nil {
		return c, err
	}
	if v, ok := f["idle_timeout"]; ok {
		if c.IdleTimeout, err = r.Duration(v, "client.idle_timeout"); err != nil {
			return c, err
		}
	}
	if v, ok := f["env"]; ok {
		if c.Env, err = r.StrMap(v, "client.env"); err != nil {
			return c, err
		}
		r.envLines(v, "client.env")
	}
	for _, fld := range []struct {
		key string
		dst *string
	}{{"target", &c.Target}, {"listener", &c.Listener}, {"lb_policy", &c.LBPolicy}, {"lb_config", &c.LBConfig}, {"service_config", &c.ServiceConfig}} {
		if *fld.dst, err = r.OptStr(f, "client", fld.key); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (r *reader) steps(n *yaml.Node) ([]Step, error) {
	items, err := r.Items(n, "steps")
	if err != nil {
		return nil, err
	}
	var out []Step
	for i, it := range items {
		st, err := r.step(it, form.Index("steps", i))
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// actionKeys are the YAML keys of the actions, one per StepKind.
var actionKeys = []string{
	string(StepResolve), string(StepFault), string(StepClear), string(StepBackendDown),
	string(StepBackendUp), string(StepRPC), string(StepWait), string(StepFinish),
	string(StepHealth), string(StepResolverErr), string(StepXDS), string(StepConfig),
}

func (r *reader) step(n *yaml.Node, p string) (Step, error) {
	var st Step
	f, err := r.Fields(n, p, append([]string{"at", "after", "delay"}, actionKeys...)...)
	if err != nil {
		return st, err
	}
	if err := r.trigger(n, f, p, &st); err != nil {
		return st, err
	}
	var key string
	for _, k := range actionKeys {
		if _, ok := f[k]; !ok {
			continue
		}
		if key != "" {
			return st, r.ErrAt(f[k], p, "more than one action (%s and %s)", key, k)
		}
		key = k
	}
	if key == "" {
		return st, r.ErrAt(n, p, "no action (want one of %s)", strings.Join(actionKeys, ", "))
	}
	st.Action, err = r.action(StepKind(key), f[key], form.Join(p, key))
	return st, err
}

func (r *reader) trigger(n *yaml.Node, f map[string]*yaml.Node, p string, st *Step) error {
	at, hasAt := f["at"]
	after, hasAfter := f["after"]
	switch {
	case hasAt && hasAfter:
		return r.ErrAt(after, form.Join(p, "after"), "at and after are exclusive")
	case !hasAt && !hasAfter:
		return r.ErrAt(n, p, "needs at or after")
	}
	var err error
	if hasAt {
		if st.At, err = r.Duration(at, form.Join(p, "at")); err != nil {
			return err
		}
	} else {
		c, err := r.cond(after, form.Join(p, "after"))
		if err != nil {
			return err
		}
		st.After = &c
	}
	if d, ok := f["delay"]; ok {
		if st.Delay, err = r.Duration(d, form.Join(p, "delay")); err != nil {
			return err
		}
	}
	return nil
}
