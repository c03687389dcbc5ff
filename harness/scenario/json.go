package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// The JSON form of a scenario has the same fields as the YAML form; it is
// how a trace header embeds its scenario. Both forms are built from one
// yaml.Node tree, so they cannot drift apart.

// MarshalJSON writes s as compact JSON, keys in a fixed order.
func (s Scenario) MarshalJSON() ([]byte, error) {
	n, err := toNode(&s)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalJSON reads s strictly and validates it, like Decode.
func (s *Scenario) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readJSON(dec)
	if err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("scenario: data after the JSON value")
	}
	got, err := decodeNode(n)
	if err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	*s = *got
	return nil
}

// writeJSON renders a tree built by toNode: mappings as objects in key
// order, sequences as arrays, scalars by their tag.
func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, n.Content[i].Value)
			buf.WriteByte(':')
			if err := writeJSON(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			writeString(buf, n.Value)
		case "!!int", "!!bool":
			buf.WriteString(n.Value)
		default:
			return fmt.Errorf("cannot write a %s scalar as JSON", n.Tag)
		}
	default:
		return fmt.Errorf("cannot write node kind %v as JSON", n.Kind)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}

// readJSON builds a yaml.Node tree from the next JSON value of dec, so that
// the YAML reader's strict checks apply to JSON too.
func readJSON(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		return readJSONContainer(dec, t)
	case string:
		return form.Scalar("!!str", t), nil
	case json.Number:
		return form.Scalar(numberTag(t.String()), t.String()), nil
	case bool:
		if t {
			return form.Scalar("!!bool", "true"), nil
		}
		return form.Scalar("!!bool", "false"), nil
	case nil:
		return form.Scalar("!!null", "null"), nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// numberTag is the YAML tag of a JSON number: an integer when it is one in
// the range of int64 or of uint64 (ring sizes are uint64), else a float.
func numberTag(s string) string {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return "!!int"
	}
	if _, err := strconv.ParseUint(s, 10, 64); err == nil {
		return "!!int"
	}
	return "!!float"
}

func readJSONContainer(dec *json.Decoder, open json.Delim) (*yaml.Node, error) {
	n := form.Seq()
	if open == '{' {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	for dec.More() {
		if open == '{' {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, form.Scalar("!!str", k.(string)))
		}
		v, err := readJSON(dec)
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, v)
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, err
	}
	return n, nil
}
