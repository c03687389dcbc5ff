// Package catalogue holds the requirement catalogue (harness/requirement)
// and the suites' checks to each other: it imports every suite, which
// harness/requirement, a format, must not.
package catalogue

import (
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/a56"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/a62"
	"github.com/conformlab/conform/suites/a75"
	"github.com/conformlab/conform/suites/spec"
)

// allSpecs are every suite's specs.
func allSpecs() []spec.Spec {
	var out []spec.Spec
	for _, specs := range []func() []spec.Spec{a61.Specs, a62.Specs, a56.Specs, a75.Specs} {
		out = append(out, specs()...)
	}
	return out
}

// TestCatalogue_JudgedAsTheChecksJudge verifies that every requirement is
// judged as the catalogue says (spec.JudgedDisagreements): a black-box one
// by a check that works without the policy's events, a reference-only one
// only by checks that declare Needs, a not-checkable one by none.
func TestCatalogue_JudgedAsTheChecksJudge(t *testing.T) {
	for _, d := range spec.JudgedDisagreements(requirement.All(), allSpecs()) {
		r, _ := requirement.ByID(d.Requirement)
		t.Errorf("harness/requirement/%s:%d: %s", requirement.FileName, r.Line, d)
	}
}

// TestCatalogue_BlackBoxChecksWorkFromOutside verifies that a check
// declaring no Needs works without the policy's events, as it claims: it
// passes on the reference's golden lab trace with those events taken out
// (fromOutside), as it passes on the whole trace. A check that fails there
// reads the policy's events without saying so, and would fail a third party
// for lacking them.
func TestCatalogue_BlackBoxChecksWorkFromOutside(t *testing.T) {
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range allSpecs() {
		if !s.RunsIn(spec.Lab) {
			continue
		}
		var outside []spec.Check
		for _, c := range s.Checks {
			if len(c.Needs) == 0 {
				outside = append(outside, c)
			}
		}
		if len(outside) == 0 {
			continue
		}
		tr, err := trace.ReadFile(spec.GoldenPath(dir, s, spec.Lab))
		if err != nil {
			t.Errorf("spec %s: %v", s.Name(), err)
			continue
		}
		whole := verdict.Evaluate(s.Subject(spec.Lab), outside, tr)
		for i, r := range verdict.Evaluate(s.Subject(spec.Lab), outside, fromOutside(tr)) {
			if r.Verdict != verdict.Pass && whole[i].Verdict == verdict.Pass {
				first, _, _ := strings.Cut(r.Evidence, "\n")
				req, _ := requirement.ByID(r.Requirement)
				t.Errorf("harness/requirement/%s:%d: %s, spec %s: the check declares no Needs but fails without the policy's events (%s: %s)",
					requirement.FileName, req.Line, r.Row(), s.Name(), r.Label(), first)
			}
		}
	}
}

// fromOutside is tr as a third party's trace would show the same run:
// without the policy's events. The policy's re-resolution requests stay, as
// the channel's (a driver reports those as resolve-now of its own; the
// reference's in-process lab client records only the policy's).
func fromOutside(tr *trace.Trace) *trace.Trace {
	out := &trace.Trace{Header: tr.Header}
	for _, e := range tr.Events {
		switch {
		case e.Source != trace.SourcePolicy:
		case e.Kind == trace.KindResolveNow:
			e.Source = trace.SourceDriver
		default:
			continue
		}
		out.Events = append(out.Events, e)
	}
	return out
}
