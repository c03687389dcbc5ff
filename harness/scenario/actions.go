package scenario

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/conformlab/conform/harness/scenario/internal/form"
	"github.com/conformlab/conform/harness/scenario/xds"
)

func (r *reader) action(k StepKind, n *yaml.Node, p string) (Action, error) {
	switch k {
	case StepResolve:
		return r.resolve(n, p)
	case StepFault:
		f, err := r.Fields(n, p, "addr", "type", "code")
		if err != nil {
			return nil, err
		}
		var addr, typ, code string
		for _, fld := range []struct {
			key string
			dst *string
		}{{"addr", &addr}, {"type", &typ}, {"code", &code}} {
			if *fld.dst, err = r.OptStr(f, p, fld.key); err != nil {
				return nil, err
			}
		}
		return SetFault{Addr: Addr(addr), Fault: FaultType(typ), Code: code}, nil
	case StepClear:
		addr, err := r.one(n, p, "addr")
		return ClearFault{Addr: Addr(addr)}, err
	case StepBackendDown:
		b, err := r.one(n, p, "backend")
		return BackendDown{Backend: b}, err
	case StepBackendUp:
		b, err := r.one(n, p, "backend")
		return BackendUp{Backend: b}, err
	case StepRPC:
		return r.rpc(n, p)
	case StepWait:
		return r.wait(n, p)
	case StepFinish:
		_, err := r.Fields(n, p)
		return EndRun{}, err
	case StepHealth:
		f, err := r.Fields(n, p, "addr", "service", "status")
		if err != nil {
			return nil, err
		}
		var addr string
		var h SetHealth
		err = r.Strs(f, p, []form.Field[string]{{Key: "addr", Dst: &addr}, {Key: "service", Dst: &h.Service}, {Key: "status", Dst: &h.Status}})
		h.Addr = Addr(addr)
		return h, err
	case StepXDS:
		x, err := xds.Decode(&r.Reader, n, p)
		if err != nil {
			return nil, err
		}
		return SetXDS{Resources: x}, nil
	case StepResolverErr:
		e, err := r.one(n, p, "err")
		return ResolverError{Err: e}, err
	case StepConfig:
		f, err := r.Fields(n, p, "lb_policy", "lb_config", "service_config")
		if err != nil {
			return nil, err
		}
		var c SetConfig
		for _, fld := range []struct {
			key string
			dst *string
		}{{"lb_policy", &c.LBPolicy}, {"lb_config", &c.LBConfig}, {"service_config", &c.ServiceConfig}} {
			if *fld.dst, err = r.OptStr(f, p, fld.key); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	return nil, r.ErrAt(n, p, "unknown action")
}

// one reads a mapping with the single string field key.
func (r *reader) one(n *yaml.Node, p, key string) (string, error) {
	f, err := r.Fields(n, p, key)
	if err != nil {
		return "", err
	}
	return r.OptStr(f, p, key)
}

func (r *reader) resolve(n *yaml.Node, p string) (Action, error) {
	f, err := r.Fields(n, p, "endpoints")
	if err != nil {
		return nil, err
	}
	var u ResolverUpdate
	v, ok := f["endpoints"]
	if !ok {
		return u, nil
	}
	items, err := r.Items(v, form.Join(p, "endpoints"))
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		ep, err := r.endpoint(it, form.Index(form.Join(p, "endpoints"), i))
		if err != nil {
			return nil, err
		}
		u.Endpoints = append(u.Endpoints, ep)
	}
	return u, nil
}

func (r *reader) endpoint(n *yaml.Node, p string) (Endpoint, error) {
	var ep Endpoint
	f, err := r.Fields(n, p, "addrs", "attrs")
	if err != nil {
		return ep, err
	}
	if v, ok := f["addrs"]; ok {
		items, err := r.Items(v, form.Join(p, "addrs"))
		if err != nil {
			return ep, err
		}
		for i, it := range items {
			a, err := r.Str(it, form.Index(form.Join(p, "addrs"), i))
			if err != nil {
				return ep, err
			}
			ep.Addrs = append(ep.Addrs, Addr(a))
		}
	}
	if v, ok := f["attrs"]; ok {
		ep.Attrs, err = r.StrMap(v, form.Join(p, "attrs"))
	}
	return ep, err
}

func (r *reader) rpc(n *yaml.Node, p string) (Action, error) {
	f, err := r.Fields(n, p, "id", "deadline", "wait_for_ready", "metadata")
	if err != nil {
		return nil, err
	}
	var rpc StartRPC
	if rpc.ID, err = r.OptStr(f, p, "id"); err != nil {
		return nil, err
	}
	if v, ok := f["deadline"]; ok {
		if rpc.Deadline, err = r.Duration(v, form.Join(p, "deadline")); err != nil {
			return nil, err
		}
	}
	if v, ok := f["wait_for_ready"]; ok {
		if rpc.WaitForReady, err = r.Bool(v, form.Join(p, "wait_for_ready")); err != nil {
			return nil, err
		}
	}
	if v, ok := f["metadata"]; ok {
		if rpc.Metadata, err = r.StrMap(v, form.Join(p, "metadata")); err != nil {
			return nil, err
		}
	}
	return rpc, nil
}

func (r *reader) wait(n *yaml.Node, p string) (Action, error) {
	f, err := r.Fields(n, p, "event", "timeout")
	if err != nil {
		return nil, err
	}
	var w WaitFor
	if v, ok := f["event"]; ok {
		if w.Cond, err = r.cond(v, form.Join(p, "event")); err != nil {
			return nil, err
		}
	}
	if v, ok := f["timeout"]; ok {
		if w.Timeout, err = r.Duration(v, form.Join(p, "timeout")); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (r *reader) cond(n *yaml.Node, p string) (Cond, error) {
	var c Cond
	f, err := r.Fields(n, p, "kind", "state", "addr", "backend", "rpc", "code", "timer", "policy", "xds", "type", "count")
	if err != nil {
		return c, err
	}
	var addr string
	for _, fld := range []struct {
		key string
		dst *string
	}{{"kind", &c.Kind}, {"state", &c.State}, {"addr", &addr}, {"backend", &c.Backend}, {"rpc", &c.RPC}, {"code", &c.Code}, {"timer", &c.Timer}, {"policy", &c.Policy}, {"xds", &c.XDS}, {"type", &c.Type}} {
		if *fld.dst, err = r.OptStr(f, p, fld.key); err != nil {
			return c, err
		}
	}
	c.Addr = Addr(addr)
	if v, ok := f["count"]; ok {
		if c.Count, err = r.Int(v, form.Join(p, "count")); err != nil {
			return c, err
		}
	}
	return c, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlErrLine extracts the line from a yaml syntax error, or 1.
func yamlErrLine(err error) int {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// yamlErrMsg is a yaml syntax error without its "yaml: line N:" prefix.
func yamlErrMsg(err error) string {
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	return strings.TrimPrefix(msg, "yaml: ")
}
