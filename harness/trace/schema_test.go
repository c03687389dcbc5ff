package trace

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/conformlab/conform/harness/scenario"
)

const schemaPath = "../../traces/schema/trace-v1.schema.json"

type schemaDoc struct {
	Defs map[string]struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	} `json:"$defs"`
}

func loadSchema(t *testing.T) schemaDoc {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatalf("%s is not well-formed JSON", schemaPath)
	}
	var doc schemaDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// constsOfType lists the values of the string constants of type typ
// declared in event.go, so that a constant added there cannot be forgotten.
func constsOfType(t *testing.T, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// TestSchema_KindsAndSourcesMatchEventGo verifies every Kind and Source
// constant of event.go is known to the reader and listed in the JSON Schema,
// and the schema lists nothing else.
func TestSchema_KindsAndSourcesMatchEventGo(t *testing.T) {
	doc := loadSchema(t)
	ev := doc.Defs["event"].Properties
	for _, c := range []struct {
		typ    string
		reader []string
		schema []string
	}{
		{"Kind", strs(Kinds()), ev["kind"].Enum},
		{"Source", strs(Sources()), ev["src"].Enum},
	} {
		consts := constsOfType(t, c.typ)
		if len(consts) == 0 {
			t.Fatalf("no %s constants found in event.go", c.typ)
		}
		slices.Sort(consts)
		reader, schema := slices.Sorted(slices.Values(c.reader)), slices.Sorted(slices.Values(c.schema))
		if !slices.Equal(consts, reader) {
			t.Errorf("%s: event.go has %v, the reader (kinds.go) knows %v", c.typ, consts, reader)
		}
		if !slices.Equal(consts, schema) {
			t.Errorf("%s: event.go has %v, the schema lists %v", c.typ, consts, schema)
		}
	}
}

// TestSchema_FieldsMatchEventAndHeader verifies the schema's event and
// header properties are exactly the JSON fields of Event and Header.
func TestSchema_FieldsMatchEventAndHeader(t *testing.T) {
	doc := loadSchema(t)
	for def, fields := range map[string][]string{"event": eventFields, "header": headerFields} {
		var props []string
		for k := range doc.Defs[def].Properties {
			props = append(props, k)
		}
		slices.Sort(props)
		want := slices.Sorted(slices.Values(fields))
		if !slices.Equal(props, want) {
			t.Errorf("$defs.%s properties %v, Go fields %v", def, props, want)
		}
	}
}

// TestScenarioEventKinds_AreTraceKinds verifies a scenario can only wait for
// events the trace format has.
func TestScenarioEventKinds_AreTraceKinds(t *testing.T) {
	for _, k := range scenario.EventKinds() {
		if !Kind(k).Known() {
			t.Errorf("scenario.EventKinds has %q, not a trace kind", k)
		}
	}
}
