package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/conformlab/conform/harness/report"
)

const reportSchema = "report.schema.json"

// compileReportSchema compiles one definition of report.schema.json (the
// compiler checks the document against the draft 2020-12 metaschema).
func compileReportSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(reportSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", reportSchema, err)
	}
	id := doc.(map[string]any)["$id"].(string)
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id + "#/$defs/" + def)
	if err != nil {
		t.Fatalf("%s: $defs/%s: %v", reportSchema, def, err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return s.Validate(v)
}

// TestJSON_ValidatesAgainstTheSchema checks `conform run --json` and
// `conform verify --json` for runs of every verdict against their
// documented schema (report.schema.json), and that the schema refuses a
// result with an unknown verdict, a key in another convention, and a kind
// on a pass, so that the check can fail.
func TestJSON_ValidatesAgainstTheSchema(t *testing.T) {
	var run, verify bytes.Buffer
	if err := (report.Table{Runs: fixtureRuns()}).JSON(&run); err != nil {
		t.Fatal(err)
	}
	if err := fixtureMatrix().JSON(&verify); err != nil {
		t.Fatal(err)
	}
	runSchema, verifySchema := compileReportSchema(t, "run"), compileReportSchema(t, "verify")
	if err := validate(t, runSchema, run.Bytes()); err != nil {
		t.Errorf("conform run --json does not validate: %v", err)
	}
	if err := validate(t, verifySchema, verify.Bytes()); err != nil {
		t.Errorf("conform verify --json does not validate: %v", err)
	}
	for _, bad := range []struct{ old, new string }{
		{`"verdict": "pass"`, `"verdict": "passed"`},
		{`"wall_seconds"`, `"wallSeconds"`},
		{`"verdict": "pass"`, `"verdict": "pass", "kind": "absent"`},
		{`"verdict": "error",`, `"verdict": "error", "x": 1,`},
	} {
		b := []byte(strings.Replace(run.String(), bad.old, bad.new, 1))
		if err := validate(t, runSchema, b); err == nil {
			t.Errorf("the schema takes a run report with %s for %s", bad.new, bad.old)
		}
	}
}

// TestJSON_KeysAreSnakeCase checks every key of the JSON reports is in
// the one convention the schema documents: lower case words joined by "_".
func TestJSON_KeysAreSnakeCase(t *testing.T) {
	var run, verify bytes.Buffer
	if err := (report.Table{Runs: fixtureRuns()}).JSON(&run); err != nil {
		t.Fatal(err)
	}
	if err := fixtureMatrix().JSON(&verify); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{run.Bytes(), verify.Bytes()} {
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, k := range keysOf(doc, true) {
			if !snakeCase(k) {
				t.Errorf("key %q is not snake_case", k)
			}
		}
	}
}

// keysOf lists the object keys in v, except those of maps keyed by data
// (golden_divergence, disagreement: spec names).
func keysOf(v any, descend bool) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if !descend {
				continue
			}
			out = append(out, k)
			out = append(out, keysOf(e, k != "golden_divergence" && k != "disagreement")...)
		}
	case []any:
		for _, e := range v {
			out = append(out, keysOf(e, true)...)
		}
	}
	return out
}

func snakeCase(k string) bool {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return k != "" && k[0] != '_'
}
