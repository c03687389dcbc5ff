package form

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Reader reads typed values out of a yaml.Node tree strictly, naming the
// field path and line of anything wrong, and remembers the line of every
// path so that validation's errors can be placed in the file (LineOf). The
// zero Reader is ready to use.
type Reader struct {
	lines map[string]int // field path → line of its value
}

// ErrAt is a problem with the field at path, on n's line.
func (r *Reader) ErrAt(n *yaml.Node, path, format string, args ...any) *Error {
	return &Error{Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)}
}

// Seen records n's line as the line of path.
func (r *Reader) Seen(n *yaml.Node, path string) {
	if r.lines == nil {
		r.lines = map[string]int{}
	}
	r.lines[path] = n.Line
}

// LineOf finds the line of path, or of its nearest ancestor that was read,
// or else fallback.
func (r *Reader) LineOf(path string, fallback int) int {
	for path != "" {
		if l, ok := r.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return fallback
}

// Fields checks that n is a mapping with string keys drawn from allowed,
// each at most once, and returns the values by key.
func (r *Reader) Fields(n *yaml.Node, path string, allowed ...string) (map[string]*yaml.Node, error) {
	r.Seen(n, path)
	if n.Kind != yaml.MappingNode {
		return nil, r.ErrAt(n, path, "must be a mapping")
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, r.ErrAt(k, path, "keys must be plain strings")
		}
		sub := Join(path, k.Value)
		if !slices.Contains(allowed, k.Value) {
			return nil, r.ErrAt(k, sub, "unknown field")
		}
		if _, dup := out[k.Value]; dup {
			return nil, r.ErrAt(k, sub, "field given twice")
		}
		if v.Kind == yaml.AliasNode {
			return nil, r.ErrAt(v, sub, "aliases are not supported")
		}
		out[k.Value] = v
		r.Seen(v, sub)
	}
	return out, nil
}

// Items checks that n is a sequence and returns its elements.
func (r *Reader) Items(n *yaml.Node, path string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, r.ErrAt(n, path, "must be a list")
	}
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode {
			return nil, r.ErrAt(c, Index(path, i), "aliases are not supported")
		}
		r.Seen(c, Index(path, i))
	}
	return n.Content, nil
}

// List calls each for every element of the list field key of f, if present.
func (r *Reader) List(f map[string]*yaml.Node, p, key string, each func(*yaml.Node, string) error) error {
	v, ok := f[key]
	if !ok {
		return nil
	}
	items, err := r.Items(v, Join(p, key))
	if err != nil {
		return err
	}
	for i, it := range items {
		if err := each(it, Index(Join(p, key), i)); err != nil {
			return err
		}
	}
	return nil
}

// Str reads a scalar as text. Numbers and booleans are taken as written
// ("id: 1" is the id "1"); null is refused.
func (r *Reader) Str(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", r.ErrAt(n, path, "must be a string")
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool":
		return n.Value, nil
	}
	return "", r.ErrAt(n, path, "must be a string, not %s", n.ShortTag())
}

// OptStr reads the string field key of f, or "" when it is absent.
func (r *Reader) OptStr(f map[string]*yaml.Node, p, key string) (string, error) {
	v, ok := f[key]
	if !ok {
		return "", nil
	}
	return r.Str(v, Join(p, key))
}

// Field names a destination for a field of a mapping.
type Field[T any] struct {
	Key string
	Dst *T
}

// Strs reads the optional string fields of f named in dst, in order.
func (r *Reader) Strs(f map[string]*yaml.Node, p string, dst []Field[string]) error {
	for _, d := range dst {
		v, err := r.OptStr(f, p, d.Key)
		if err != nil {
			return err
		}
		*d.Dst = v
	}
	return nil
}

// StrList reads the optional list of strings key of f.
func (r *Reader) StrList(f map[string]*yaml.Node, p, key string) ([]string, error) {
	var out []string
	err := r.List(f, p, key, func(it *yaml.Node, ip string) error {
		s, err := r.Str(it, ip)
		out = append(out, s)
		return err
	})
	return out, err
}

// Duration reads a Go duration ("250ms").
func (r *Reader) Duration(n *yaml.Node, path string) (time.Duration, error) {
	s, err := r.Str(n, path)
	if err != nil {
		return 0, err
	}
	d, perr := time.ParseDuration(s)
	if perr != nil {
		return 0, r.ErrAt(n, path, "%q is not a duration (like 250ms, 1.5s, 2m)", s)
	}
	return d, nil
}

// Bool reads true or false.
func (r *Reader) Bool(n *yaml.Node, path string) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, r.ErrAt(n, path, "must be true or false")
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, r.ErrAt(n, path, "must be true or false")
	}
	return b, nil
}

// OptBool reads the optional boolean key of f.
func (r *Reader) OptBool(f map[string]*yaml.Node, p, key string) (bool, error) {
	n, ok := f[key]
	if !ok {
		return false, nil
	}
	return r.Bool(n, Join(p, key))
}

// Int reads a decimal integer that fits in 32 bits.
func (r *Reader) Int(n *yaml.Node, path string) (int, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, r.ErrAt(n, path, "must be an integer")
	}
	v, err := strconv.ParseInt(n.Value, 10, 32)
	if err != nil {
		return 0, r.ErrAt(n, path, "must be a decimal integer")
	}
	return int(v), nil
}

// OptUint reads the optional unsigned integer key of f, of bits bits.
func (r *Reader) OptUint(f map[string]*yaml.Node, p, key string, bits int) (uint64, error) {
	n, ok := f[key]
	if !ok {
		return 0, nil
	}
	path := Join(p, key)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, r.ErrAt(n, path, "must be an integer")
	}
	v, err := strconv.ParseUint(n.Value, 10, bits)
	if err != nil {
		return 0, r.ErrAt(n, path, "must be a decimal integer from 0 to %d", uint64(1)<<bits-1)
	}
	return v, nil
}

// Uint32s reads the optional uint32 fields of f named in dst, in order.
func (r *Reader) Uint32s(f map[string]*yaml.Node, p string, dst []Field[uint32]) error {
	for _, d := range dst {
		v, err := r.OptUint(f, p, d.Key, 32)
		if err != nil {
			return err
		}
		*d.Dst = uint32(v)
	}
	return nil
}

// OptInt reads the optional signed integer key of f, of bits bits.
func (r *Reader) OptInt(f map[string]*yaml.Node, p, key string, bits int) (int64, error) {
	n, ok := f[key]
	if !ok {
		return 0, nil
	}
	path := Join(p, key)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, r.ErrAt(n, path, "must be an integer")
	}
	v, err := strconv.ParseInt(n.Value, 10, bits)
	if err != nil {
		return 0, r.ErrAt(n, path, "must be a decimal %d-bit integer", bits)
	}
	return v, nil
}

// StrMap reads a mapping of strings; an empty mapping or null gives nil.
func (r *Reader) StrMap(n *yaml.Node, path string) (map[string]string, error) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, r.ErrAt(n, path, "must be a mapping of strings")
	}
	var out map[string]string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := r.Str(n.Content[i], path)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, r.ErrAt(n.Content[i], Join(path, k), "key given twice")
		}
		v, err := r.Str(n.Content[i+1], Join(path, k))
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

// Join is the path of field key of the mapping at path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index is the path of element i of the list at path.
func Index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
