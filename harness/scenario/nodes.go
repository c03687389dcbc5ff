package scenario

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// reader reads typed values out of a yaml.Node tree strictly, naming the
// field path and line of anything wrong, and remembers the line of every
// path so that Validate's errors can be placed in the file.
type reader struct {
	lines map[string]int // field path → line of its value
}

func (r *reader) errAt(n *yaml.Node, path, format string, args ...any) *Error {
	return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)}
}

func (r *reader) seen(n *yaml.Node, path string) {
	r.lines[path] = n.Line
}

// fields checks that n is a mapping with string keys drawn from allowed,
// each at most once, and returns the values by key.
func (r *reader) fields(n *yaml.Node, path string, allowed ...string) (map[string]*yaml.Node, error) {
	r.seen(n, path)
	if n.Kind != yaml.MappingNode {
		return nil, r.errAt(n, path, "must be a mapping")
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, r.errAt(k, path, "keys must be plain strings")
		}
		sub := join(path, k.Value)
		if !contains(allowed, k.Value) {
			return nil, r.errAt(k, sub, "unknown field")
		}
		if _, dup := out[k.Value]; dup {
			return nil, r.errAt(k, sub, "field given twice")
		}
		if v.Kind == yaml.AliasNode {
			return nil, r.errAt(v, sub, "aliases are not supported")
		}
		out[k.Value] = v
		r.seen(v, sub)
	}
	return out, nil
}

// items checks that n is a sequence and returns its elements.
func (r *reader) items(n *yaml.Node, path string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, r.errAt(n, path, "must be a list")
	}
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode {
			return nil, r.errAt(c, index(path, i), "aliases are not supported")
		}
		r.seen(c, index(path, i))
	}
	return n.Content, nil
}

// str reads a scalar as text. Numbers and booleans are taken as written
// ("id: 1" is the id "1"); null is refused.
func (r *reader) str(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", r.errAt(n, path, "must be a string")
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool":
		return n.Value, nil
	}
	return "", r.errAt(n, path, "must be a string, not %s", n.ShortTag())
}

func (r *reader) duration(n *yaml.Node, path string) (time.Duration, error) {
	s, err := r.str(n, path)
	if err != nil {
		return 0, err
	}
	d, perr := time.ParseDuration(s)
	if perr != nil {
		return 0, r.errAt(n, path, "%q is not a duration (like 250ms, 1.5s, 2m)", s)
	}
	return d, nil
}

func (r *reader) boolean(n *yaml.Node, path string) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, r.errAt(n, path, "must be true or false")
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, r.errAt(n, path, "must be true or false")
	}
	return b, nil
}

func (r *reader) integer(n *yaml.Node, path string) (int, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, r.errAt(n, path, "must be an integer")
	}
	v, err := strconv.ParseInt(n.Value, 10, 32)
	if err != nil {
		return 0, r.errAt(n, path, "must be a decimal integer")
	}
	return int(v), nil
}

// strMap reads a mapping of strings; an empty mapping or null gives nil.
func (r *reader) strMap(n *yaml.Node, path string) (map[string]string, error) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, r.errAt(n, path, "must be a mapping of strings")
	}
	var out map[string]string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := r.str(n.Content[i], path)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, r.errAt(n.Content[i], join(path, k), "key given twice")
		}
		v, err := r.str(n.Content[i+1], join(path, k))
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
