package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// TestJudgedDisagreements verifies that each way a catalogue entry and the
// checks can disagree on how a requirement is judged is found, named by the
// requirement and the spec, and that agreeing ones are not.
func TestJudgedDisagreements(t *testing.T) {
	pass := func(gomega.Gomega, *trace.Trace) {}
	req := func(id string, j requirement.Judged) requirement.Requirement {
		return requirement.Requirement{ID: id, Doc: requirement.A61, Judged: j}
	}
	reqs := []requirement.Requirement{
		req("A61-BB-OK", requirement.BlackBox),            // one check from outside, one more with Needs
		req("A61-BB-ALL-NEEDS", requirement.BlackBox),     // every check needs the policy's events
		req("A61-BB-UNCOVERED", requirement.BlackBox),     // no checks: uncovered, not a disagreement
		req("A61-BB-BACKENDS", requirement.BlackBox),      // its one check needs the backends' evidence: anyone's
		req("A61-RO-OK", requirement.ReferenceOnly),       // every check declares Needs
		req("A61-RO-NO-NEEDS", requirement.ReferenceOnly), // one check does not
		req("A61-NC-OK", requirement.NotCheckable),        // no checks
		req("A61-NC-CHECKED", requirement.NotCheckable),   // checked all the same
	}
	one := tinySpec(
		Check{Requirement: "A61-BB-OK", Assert: pass},
		Check{Requirement: "A61-BB-OK", Needs: NeedsPolicy, Assert: pass},
		Check{Requirement: "A61-BB-ALL-NEEDS", Needs: NeedsPolicy, Assert: pass},
		Check{Requirement: "A61-BB-BACKENDS", Needs: []trace.Source{trace.SourceBackend}, Assert: pass},
		Check{Requirement: "A61-RO-OK", Needs: NeedsPolicy, Assert: pass},
		Check{Requirement: "A61-RO-NO-NEEDS", Needs: NeedsPolicy, Assert: pass},
		Check{Requirement: "A61-RO-NO-NEEDS", Name: "from outside", Assert: pass},
	)
	two := tinySpec(
		Check{Requirement: "A61-BB-ALL-NEEDS", Needs: NeedsPolicy, Assert: pass},
		Check{Requirement: "A61-NC-CHECKED", Assert: pass},
	)
	two.Scenario = cloneNamed(two, "tiny-two")
	got := JudgedDisagreements(reqs, []Spec{one, two})
	var lines []string
	for _, d := range got {
		lines = append(lines, d.String())
	}
	want := []string{
		"A61-BB-ALL-NEEDS (black-box): every check reads the policy's events (Needs), in tiny, tiny-two",
		"A61-RO-NO-NEEDS (reference-only), spec tiny: check from outside does not need the policy's events",
		"A61-NC-CHECKED (not-checkable), spec tiny-two: check judges a requirement the catalogue says nothing can check",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d disagreements, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("disagreement %d = %q, want it to start %q", i+1, lines[i], w)
		}
	}
	for _, ok := range []string{"A61-BB-OK", "A61-BB-BACKENDS", "A61-BB-UNCOVERED", "A61-RO-OK", "A61-NC-OK"} {
		if slices.ContainsFunc(got, func(d Disagreement) bool { return d.Requirement == ok }) {
			t.Errorf("%s agrees with its checks, but is reported", ok)
		}
	}
}

// cloneNamed is s's scenario under another name.
func cloneNamed(s Spec, name string) *scenario.Scenario {
	c := *s.Scenario
	c.Name = name
	return &c
}
