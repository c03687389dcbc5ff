package requirement

import (
	"slices"
	"strings"
	"testing"
)

// TestParse_Applies verifies the scope fields parse into Applies, each
// clause with its negation.
func TestParse_Applies(t *testing.T) {
	const src = `- id: A75-SSA
  doc: A75
  revision: both
  section: S
  text: T
  judged: black-box
  impls: not go, java, node
  unless_can: session_metadata
  applies_because: A75, Implementation - if/when
- id: A61-ONLY
  doc: A61
  revision: both
  section: S
  text: T
  judged: black-box
  impls: go, java
  can: not shuffle
  env: GRPC_SWITCH!=true
  applies_because: A61, Some Section
- id: A61-NONE
  doc: A61
  revision: both
  section: S
  text: T
  judged: black-box
`
	c, err := Parse("good.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ssa, _ := c.ByID("A75-SSA")
	want := Applies{Langs: []string{Go, Java, Node}, Except: true, UnlessCan: "session_metadata", Because: "A75, Implementation - if/when"}
	if a := ssa.Applies; !slices.Equal(a.Langs, want.Langs) || a.Except != want.Except || a.UnlessCan != want.UnlessCan || a.Because != want.Because || a.Can != "" || a.Env != "" {
		t.Errorf("A75-SSA applies %+v, want %+v", a, want)
	}
	only, _ := c.ByID("A61-ONLY")
	if a := only.Applies; !slices.Equal(a.Langs, []string{Go, Java}) || a.Except || a.Can != "shuffle" || !a.CanNot ||
		a.Env != "GRPC_SWITCH" || a.EnvValue != "true" || !a.EnvNot {
		t.Errorf("A61-ONLY applies %+v", a)
	}
	if got := only.Applies.String(); got != "impls go, java; cannot shuffle; env GRPC_SWITCH!=true" {
		t.Errorf("String = %q", got)
	}
	if none, _ := c.ByID("A61-NONE"); none.Applies.Scoped() {
		t.Errorf("A61-NONE is scoped: %+v", none.Applies)
	}
}

// TestParse_BadApplies verifies each malformed scope is refused at its
// field's line.
func TestParse_BadApplies(t *testing.T) {
	const head = "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: black-box\n"
	const because = "  applies_because: A61, S\n"
	tests := []struct{ name, yaml, want string }{
		{"unknown language", head + "  impls: go, rust\n" + because, `bad.yaml:7: A61-X: impls: unknown language "rust"`},
		{"language twice", head + "  impls: not go, go\n" + because, "bad.yaml:7: A61-X: impls: go given twice"},
		{"unless_can alone", head + "  unless_can: shuffle\n  can: shuffle\n" + because, "bad.yaml:7: A61-X: unless_can brings back implementations impls leaves out"},
		{"capability not a name", head + "  can: Shuffle It\n" + because, `bad.yaml:7: A61-X: can "Shuffle It" is not a driver capability`},
		{"env without a value", head + "  env: GRPC_SWITCH\n" + because, `bad.yaml:7: A61-X: env "GRPC_SWITCH": want GRPC_NAME=value`},
		{"scope without a reason", head + "  impls: c-core\n", "bad.yaml:1: A61-X: a scoped entry needs applies_because"},
		{"reason without a scope", head + because, "bad.yaml:7: A61-X: applies_because without impls, can or env"},
		{"reason citing no document", head + "  impls: c-core\n  applies_because: only C-core\n", "bad.yaml:8: A61-X: applies_because must cite the document"},
		{"reason too long", head + "  impls: c-core\n  applies_because: A61 " + strings.Repeat("word ", 50) + "\n", "bad.yaml:8: A61-X: applies_because is 253 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("Parse accepted the catalogue")
			}
			if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) {
				t.Errorf("problems:\n%v\nwant one starting %q", err, tt.want)
			}
		})
	}
}

// TestApplies_OutOfScope verifies who a scope leaves out, and why: a
// language clause (and the capability that brings one back), a capability
// clause either way, an environment clause either way; never the reference,
// and never an implementation whose language conform does not know.
func TestApplies_OutOfScope(t *testing.T) {
	ssa := Applies{Langs: []string{Go, Java, Node}, Except: true, UnlessCan: "session_metadata", Because: "A75, Implementation"}
	javaGo := Applies{Langs: []string{Go, Java}, Because: "A61, Address List Updates in Java/Go"}
	shuffles := Applies{Can: "shuffle", Because: "A62, shuffling"}
	noShuffle := Applies{Can: "shuffle", CanNot: true, Because: "A62, shuffling"}
	withSwitch := Applies{Env: "GRPC_X", EnvValue: "true", Because: "A75, switch"}
	withoutSwitch := Applies{Env: "GRPC_X", EnvValue: "true", EnvNot: true, Because: "A75, switch"}
	on := map[string]string{"GRPC_X": "true"}
	tests := []struct {
		name string
		a    Applies
		run  Run
		want string // a part of the reason; "" when in scope
	}{
		{"go left out", ssa, Run{Impl: "grpc-go"}, "grpc-go is go, and the rule is not for go, java, node unless the driver declares session_metadata"},
		{"node left out, release name", ssa, Run{Impl: "grpc-js@1.14.7"}, "grpc-js@1.14.7 is node"},
		{"go brought back by the feature", ssa, Run{Impl: "grpc-go", Can: []string{"xds", "session_metadata"}}, ""},
		{"c-core in scope", ssa, Run{Impl: "grpcio"}, ""},
		{"the reference is never left out", ssa, Run{Impl: Reference}, ""},
		{"an unknown implementation is judged", ssa, Run{Impl: "acme-balancer"}, ""},
		{"c-core not java or go", javaGo, Run{Impl: "grpcio"}, "the rule is for go, java only (A61, Address List Updates in Java/Go)"},
		{"linked grpc-go in scope", javaGo, Run{Impl: "grpc-go@v1.86.0 (linked)"}, ""},
		{"shuffle lacking", shuffles, Run{Impl: "grpcio"}, "it is for implementations with shuffle, and grpcio's driver does not declare it"},
		{"shuffle declared", shuffles, Run{Impl: "grpcio", Can: []string{"shuffle"}}, ""},
		{"for those without shuffle", noShuffle, Run{Impl: "grpc-go", Can: []string{"shuffle"}}, "it is for implementations without shuffle"},
		{"switch not set", withSwitch, Run{Impl: "grpc-go"}, "it holds with GRPC_X=true, which this run did not set"},
		{"switch set", withSwitch, Run{Impl: "grpc-go", Env: on}, ""},
		{"switch set against the rule", withoutSwitch, Run{Impl: "grpc-go", Env: on}, "it holds unless GRPC_X=true, and this run set it"},
		{"switch set, the reference", withoutSwitch, Run{Impl: Reference, Env: on}, ""},
		{"nothing scoped", Applies{}, Run{Impl: "grpc-go"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.a.OutOfScope(tt.run)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("out of scope: %s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("reason %q, want it to say %q", got, tt.want)
			case tt.want != "" && !strings.Contains(got, tt.a.Because):
				t.Errorf("reason %q does not give the document's words %q", got, tt.a.Because)
			}
		})
	}
}

// TestLanguageOf verifies implementations map to the languages the
// documents name.
func TestLanguageOf(t *testing.T) {
	for impl, want := range map[string]string{
		"grpc-go": Go, "grpc-go@v1.85.0": Go, "grpc-go@v1.86.0 (linked)": Go,
		"grpc-js": Node, "grpc-js@1.14.7": Node, "grpcio": CCore, "grpc-java": Java,
		"go:example.com/acme@v1.2.3 [pick_first=acme_pick_first]": Go, "go:./acme": Go,
		"reference": "", "acme": "",
	} {
		if got := LanguageOf(impl); got != want {
			t.Errorf("LanguageOf(%q) = %q, want %q", impl, got, want)
		}
	}
}

// TestCatalogue_A75SessionAffinityChangesScoped verifies the A75 scope
// the document's Implementation section sets: every statement of its
// "Stateful Session Affinity Changes" (the idle_timeout reading and
// xds_override_host among them) is out of scope for Go and Node until
// they support session affinity, and in scope for C-core.
func TestCatalogue_A75SessionAffinityChangesScoped(t *testing.T) {
	n := 0
	for _, r := range ForDoc(A75) {
		ssa := strings.HasPrefix(r.ID, "A75-SSA-") || strings.HasPrefix(r.ID, "A75-IDLE-TIMEOUT-") || strings.HasPrefix(r.ID, "A75-OVERRIDE-")
		// Runs in the entry's environment scope, if it has one.
		var env map[string]string
		if a := r.Applies; a.Env != "" && !a.EnvNot {
			env = map[string]string{a.Env: a.EnvValue}
		}
		out := func(impl string, can ...string) bool {
			return r.Applies.OutOfScope(Run{Impl: impl, Can: can, Env: env}) != ""
		}
		if ssa != out("grpc-go") || ssa != out("grpc-js") {
			t.Errorf("catalogue.yaml:%d: %s: out of scope for grpc-go %v, grpc-js %v, want %v", r.Line, r.ID, out("grpc-go"), out("grpc-js"), ssa)
		}
		if out("grpcio") || out("grpc-go", "session_metadata") {
			t.Errorf("catalogue.yaml:%d: %s: C-core, or Go with session affinity, is out of scope", r.Line, r.ID)
		}
		if ssa {
			n++
		}
	}
	if n == 0 {
		t.Error("no A75 session affinity statements")
	}
}
