package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
)

// The published JSON Schema (traces/schema/trace-v1.schema.json) checked by
// a real validator against the traces that exist: every golden trace under
// traces/, and traces this package writes now, with every field set. The
// tests of schema_test.go compare names; these compare the shape of values,
// so a field added to the scenario or the events without the schema fails
// here, at the file and line that uses it.

const tracesDir = "../../traces"

// maxReported caps the problems a test prints; the rest are counted.
const maxReported = 40

// lineSchemas are the schema's definitions of the two kinds of line.
type lineSchemas struct {
	header, event *jsonschema.Schema
}

// compileSchema compiles the schema document (which checks it against the
// draft 2020-12 metaschema) and its header and event definitions.
func compileSchema(t *testing.T) lineSchemas {
	t.Helper()
	doc := schemaJSON(t)
	id, _ := doc.(map[string]any)["$id"].(string)
	if id == "" {
		t.Fatalf("%s has no $id", schemaPath)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile(id); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	var ls lineSchemas
	for _, d := range []struct {
		def string
		dst **jsonschema.Schema
	}{{"header", &ls.header}, {"event", &ls.event}} {
		s, err := c.Compile(id + "#/$defs/" + d.def)
		if err != nil {
			t.Fatalf("%s: $defs/%s: %v", schemaPath, d.def, err)
		}
		*d.dst = s
	}
	return ls
}

// schemaJSON is the schema document as the validator reads JSON (numbers
// as json.Number, so that a seed above 2^53 is compared exactly).
func schemaJSON(t *testing.T) any {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return doc
}

// validateTrace checks a whole trace file's bytes line by line: line 1
// against $defs/header, every other line against $defs/event. Each problem
// is "name:line: at '/json/pointer': the validator's message".
func (ls lineSchemas) validateTrace(name string, data []byte) []string {
	var out []string
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return []string{name + ": empty"}
	}
	for i, line := range lines {
		sch := ls.event
		if i == 0 {
			sch = ls.header
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		if err != nil {
			out = append(out, fmt.Sprintf("%s:%d: not one JSON value: %v", name, i+1, err))
			continue
		}
		msgs := validationMessages(sch.Validate(v))
		slices.Sort(msgs) // the validator's order follows map iteration
		for _, msg := range msgs {
			out = append(out, fmt.Sprintf("%s:%d: %s", name, i+1, msg))
		}
	}
	return out
}

// validationMessages flattens a validation error into its leaves, each
// "at '/json/pointer': message"; nil when err is nil.
func validationMessages(err error) []string {
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []string{err.Error()}
	}
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, e.Error())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// reportProblems fails t with the first maxReported problems and a count
// of the rest.
func reportProblems(t *testing.T, problems []string, what string) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	shown := problems[:min(len(problems), maxReported)]
	msg := strings.Join(shown, "\n")
	if rest := len(problems) - len(shown); rest > 0 {
		msg += fmt.Sprintf("\n... and %d more", rest)
	}
	t.Errorf("%s: %d problems against %s:\n%s", what, len(problems), fromRoot(t, schemaPath), msg)
}

// goldenTraces lists the trace files under traces/
// (traces/<doc>/<name>.<mode>.jsonl) and this package's valid examples
// (testdata/*-ok.jsonl), as paths from this directory.
func goldenTraces(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(tracesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no trace files under %s", tracesDir)
	}
	// This package's own valid example, which the reader tests use.
	ok, err := filepath.Glob("testdata/*-ok.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return append(files, ok...)
}

// TestSchema_GoldenTracesValidate verifies every golden trace under traces/
// validates against the published schema: its header against
// $defs/header, each event against $defs/event.
func TestSchema_GoldenTracesValidate(t *testing.T) {
	ls := compileSchema(t)
	var problems []string
	failed := 0
	files := goldenTraces(t)
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p := ls.validateTrace(fromRoot(t, path), data)
		if len(p) > 0 {
			failed++
		}
		problems = append(problems, p...)
	}
	reportProblems(t, problems, fmt.Sprintf("%d of %d golden traces", failed, len(files)))
}

// TestSchema_WrittenTracesValidate verifies traces written now by Canonical
// validate too: the sample trace, traces whose headers and events set every
// field of the model (fullTraces), and headers embedding each valid
// scenario example of harness/scenario — so that the schema keeps up with
// fields no golden trace uses yet.
func TestSchema_WrittenTracesValidate(t *testing.T) {
	ls := compileSchema(t)
	traces := map[string]*Trace{"sampleTrace": sampleTrace()}
	for i, tr := range fullTraces() {
		traces[fmt.Sprintf("fullTraces[%d]", i)] = tr
	}
	examples, err := filepath.Glob("../scenario/testdata/*-ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 {
		t.Fatal("no scenario examples in ../scenario/testdata")
	}
	for _, path := range examples {
		s, err := scenario.DecodeFile(path)
		if err != nil {
			t.Fatal(err)
		}
		traces["harness/scenario/testdata/"+filepath.Base(path)] = &Trace{Header: NewHeader(s, "reference", ModeSim, 1)}
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(traces)) {
		data, err := Canonical(traces[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Read(name, bytes.NewReader(data)); err != nil {
			t.Fatalf("%s: the Go reader refuses it: %v", name, err)
		}
		problems = append(problems, ls.validateTrace(name, data)...)
	}
	reportProblems(t, problems, "traces written by this package")
}

// fromRoot is path (relative to this directory) from the repository's root,
// as a failure names it.
func fromRoot(t *testing.T, path string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// TestSchema_RefusesDrift verifies the schema is strict where the model is
// closed: each change to a valid line is refused, at its place.
func TestSchema_RefusesDrift(t *testing.T) {
	ls := compileSchema(t)
	data, err := Canonical(fullTraces()[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitN(data, []byte("\n"), 3)
	const (
		xds     = "/scenario/steps/0/xds"
		eds1    = xds + "/clusters/1"
		dns     = xds + "/clusters/2"
		endpt   = xds + "/endpoints/0/priorities/0/localities/0/endpoints/0"
		removed = "(removed)"
	)
	for _, c := range []struct {
		name  string
		event bool   // the change is to an event, not the header
		ptr   string // the JSON pointer changed
		value any    // its new value, or removed
		want  string // in one of the validator's messages
	}{
		{"header field", false, "/bogus", "x", "'bogus' not allowed"},
		{"seed above 2^64-1", false, "/seed", json.Number("18446744073709551616"), "at '/seed'"},
		{"client field", false, "/scenario/client/bogus", "x", "'bogus' not allowed"},
		{"xds target without listener", false, "/scenario/client/listener", removed, "missing property 'listener'"},
		{"xds target with lb_policy", false, "/scenario/client/lb_policy", "round_robin", "at '/scenario/client/lb_policy'"},
		{"listener without xds target", false, "/scenario/client/target", "dns", "at '/scenario/client/listener'"},
		{"two actions", false, "/scenario/steps/1/clear", map[string]any{"addr": "b1/ipv4"}, "at '/scenario/steps/1'"},
		{"negative end", false, "/scenario/end", "-1s", "at '/scenario/end'"},
		{"xds step field", false, xds + "/bogus", "x", "'bogus' not allowed"},
		{"listener without route_config", false, xds + "/listeners/0/route_config", removed, "missing property 'route_config'"},
		{"cluster field", false, eds1 + "/bogus", "x", "'bogus' not allowed"},
		{"cluster type", false, eds1 + "/type", "STATIC", "at '" + eds1 + "/type'"},
		{"shuffle without pick_first", false, eds1 + "/lb_policy", "round_robin", "at '" + eds1 + "/lb_policy'"},
		{"dns_host on EDS", false, eds1 + "/dns_host", "svc.conform", "at '" + eds1 + "/dns_host'"},
		{"clusters on EDS", false, eds1 + "/clusters", []any{"agg"}, "at '" + eds1 + "/clusters'"},
		{"LOGICAL_DNS without host", false, dns + "/dns_host", removed, "missing property 'dns_host'"},
		{"outlier detection field", false, eds1 + "/outlier_detection/bogus", "x", "'bogus' not allowed"},
		{"enforcement 0", false, eds1 + "/outlier_detection/success_rate/enforcement", json.Number("0"), "enforcement'"},
		{"nanos over int32", false, eds1 + "/upstream_config/http_protocol_options/idle_timeout/nanos", json.Number("2147483648"), "nanos'"},
		{"both upstream configs", false, dns + "/upstream_config/http_protocol_options", map[string]any{}, "at '" + dns + "/upstream_config'"},
		{"endpoint field", false, endpt + "/bogus", "x", "'bogus' not allowed"},
		{"invalid address form", false, endpt + "/invalid_additional_addresses/0", "bogus", "invalid_additional_addresses/0'"},
		{"weight over uint32", false, endpt + "/weight", json.Number("4294967296"), "at '" + endpt + "/weight'"},
		{"xds condition on another kind", false, "/scenario/steps/11/after/kind", "pick", "at '/scenario/steps/11/after/kind'"},
		{"fail_rpcs answering OK", false, "/scenario/steps/4/fault/code", "OK", "at '/scenario/steps/4/fault/code'"},
		{"code on a network fault", false, "/scenario/steps/4/fault/type", "drop", "at '/scenario/steps/4/fault'"},
		{"event field", true, "/bogus", "x", "'bogus' not allowed"},
		{"event xds", true, "/xds", "MAYBE", "at '/xds'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			line, sch := lines[0], ls.header
			if c.event {
				line, sch = lines[1], ls.event
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
			if err != nil {
				t.Fatal(err)
			}
			if c.value == removed {
				setPointer(t, doc, c.ptr, nil, true)
			} else {
				setPointer(t, doc, c.ptr, c.value, false)
			}
			msgs := validationMessages(sch.Validate(doc))
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, c.want) }) {
				t.Errorf("with %s = %v: want a message with %q, got %q", c.ptr, c.value, c.want, msgs)
			}
		})
	}
}

// setPointer sets (or with remove, deletes) the value at the JSON pointer
// ptr of doc, a decoded JSON object.
func setPointer(t *testing.T, doc any, ptr string, v any, remove bool) {
	t.Helper()
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := doc
	for i, tok := range toks {
		last := i == len(toks)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if remove {
					if _, ok := c[tok]; !ok {
						t.Fatalf("%s: nothing to remove", ptr)
					}
					delete(c, tok)
				} else {
					c[tok] = v
				}
				return
			}
			cur = c[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) || remove && last {
				t.Fatalf("%s: bad index %q", ptr, tok)
			}
			if last {
				c[n] = v
				return
			}
			cur = c[n]
		default:
			t.Fatalf("%s: %q is not in an object or array", ptr, tok)
		}
	}
}

// TestSchema_ScenarioEnumsMatchModel verifies the schema's closed lists of
// values are the model's: the scenario's, and the trace's own.
func TestSchema_ScenarioEnumsMatchModel(t *testing.T) {
	doc := schemaJSON(t)
	for _, c := range []struct {
		ptr  string
		want []string
	}{
		{"/$defs/header/properties/mode/enum", strs([]Mode{ModeSim, ModeLab, ModeField})},
		{"/$defs/event/properties/xds/enum", []string{XDSSubscribe, XDSACK, XDSNACK}},
		{"/$defs/scenario/properties/backends/items/properties/stack/enum", strs([]scenario.Stack{scenario.IPv4Only, scenario.IPv6Only, scenario.Dual})},
		{"/$defs/scenario/properties/client/properties/target/enum", []string{scenario.TargetManual, scenario.TargetDNS, scenario.TargetXDS}},
		{"/$defs/step/properties/fault/properties/type/enum", strs(scenario.FaultTypes())},
		{"/$defs/step/properties/fault/properties/code/enum", slices.DeleteFunc(scenario.Codes(), func(c string) bool { return c == "OK" })},
		{"/$defs/step/properties/health/properties/status/enum", []string{scenario.Serving, scenario.NotServing}},
		{"/$defs/cond/properties/kind/enum", scenario.EventKinds()},
		{"/$defs/cond/properties/state/enum", scenario.States()},
		{"/$defs/cond/properties/code/enum", scenario.Codes()},
		{"/$defs/cond/properties/xds/enum", scenario.XDSRequestKinds()},
		{"/$defs/cond/properties/type/anyOf/0/enum", scenario.XDSTypes()},
		{"/$defs/xdsCluster/properties/type/enum", strs([]xds.ClusterType{xds.ClusterEDS, xds.ClusterLogicalDNS, xds.ClusterAggregate})},
		{"/$defs/xdsCluster/properties/lb_policy/enum", []string{xds.RoundRobin, xds.RingHash, xds.PickFirst}},
		{"/$defs/xdsEndpoint/properties/health/enum", xds.HealthStatuses()},
		{"/$defs/xdsEndpoint/properties/invalid_additional_addresses/items/enum", xds.InvalidAddrForms()},
	} {
		var got []string
		list, _ := getPointer(doc, c.ptr).([]any)
		for _, v := range list {
			s, _ := v.(string)
			got = append(got, s)
		}
		if g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(c.want)); !slices.Equal(g, w) {
			t.Errorf("schema %s is %q, the model has %q", c.ptr, g, w)
		}
	}
	// The actions: a property of a step each, and exactly one of them.
	var props, oneOf []string
	step, _ := getPointer(doc, "/$defs/step/properties").(map[string]any)
	for k := range step {
		if k != "at" && k != "after" && k != "delay" {
			props = append(props, k)
		}
	}
	alts, _ := getPointer(doc, "/$defs/step/allOf/1/oneOf").([]any)
	for i := range alts {
		if k, ok := getPointer(doc, fmt.Sprintf("/$defs/step/allOf/1/oneOf/%d/required/0", i)).(string); ok {
			oneOf = append(oneOf, k)
		}
	}
	want := slices.Sorted(slices.Values(stepKinds(t)))
	if g := slices.Sorted(slices.Values(props)); !slices.Equal(g, want) {
		t.Errorf("schema $defs/step has the actions %q, harness/scenario's step kinds are %q", g, want)
	}
	if g := slices.Sorted(slices.Values(oneOf)); !slices.Equal(g, want) {
		t.Errorf("schema $defs/step/allOf/1/oneOf requires one of %q, harness/scenario's step kinds are %q", g, want)
	}
}

// getPointer is the value at the JSON pointer ptr of doc, or nil.
func getPointer(doc any, ptr string) any {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return nil
			}
			cur = c[n]
		default:
			return nil
		}
	}
	return cur
}
