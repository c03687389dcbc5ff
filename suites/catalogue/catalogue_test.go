// Package catalogue holds the requirement catalogue (harness/requirement)
// and the suites' checks to each other: it imports every suite, which
// harness/requirement, a format, must not.
package catalogue

import (
	"slices"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/a56"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/a62"
	"github.com/conformlab/conform/suites/a75"
	"github.com/conformlab/conform/suites/l9"
	"github.com/conformlab/conform/suites/spec"
)

// allSpecs are every suite's specs.
func allSpecs() []spec.Spec {
	var out []spec.Spec
	for _, specs := range []func() []spec.Spec{a61.Specs, a62.Specs, a56.Specs, a75.Specs, l9.Specs} {
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

// TestCatalogue_ScopesNameWhatRunsShow verifies that the catalogue's scopes
// are written in the names runs show: capabilities drivers declare,
// switches scenarios set, implementations conform runs, and the
// reference's name.
func TestCatalogue_ScopesNameWhatRunsShow(t *testing.T) {
	caps := []string{driver.CanEndpoints, driver.CanMixedFamilies, driver.CanServiceConfig, driver.CanShuffle,
		driver.CanWaitForReady, driver.CanXDS, driver.CanResolver, driver.CanAttemptDelay, driver.CanEndpointAttributes,
		driver.CanSessionMetadata}
	for _, r := range requirement.All() {
		a := r.Applies
		for _, c := range []string{a.UnlessCan, a.Can} {
			if c != "" && !slices.Contains(caps, c) {
				t.Errorf("harness/requirement/%s:%d: %s: %q is no capability a driver declares (%s)", requirement.FileName, r.Line, r.ID, c, strings.Join(caps, ", "))
			}
		}
		if a.Env != "" && !slices.Contains(scenario.EnvVars(), a.Env) {
			t.Errorf("harness/requirement/%s:%d: %s: %s is no switch a scenario sets (%s)", requirement.FileName, r.Line, r.ID, a.Env, strings.Join(scenario.EnvVars(), ", "))
		}
	}
	for _, impl := range []string{driver.GRPCGo, driver.GRPCJS, driver.GRPCIO, driver.GRPCJava} {
		if requirement.LanguageOf(impl) == "" {
			t.Errorf("conform runs %s, whose language the catalogue's scopes do not know", impl)
		}
	}
	if requirement.Reference != driver.Reference {
		t.Errorf("requirement.Reference = %q, the reference's driver is %q", requirement.Reference, driver.Reference)
	}
}

// TestCatalogue_SpecsRunInTheirRulesSwitches verifies that every spec
// checking a rule the document scopes by an environment switch runs its
// client in that scope: the reference, never scoped away, is otherwise
// judged on a run the rule does not speak of.
func TestCatalogue_SpecsRunInTheirRulesSwitches(t *testing.T) {
	for _, s := range allSpecs() {
		for _, id := range s.Requirements() {
			r, _ := requirement.ByID(id)
			a := r.Applies
			if a.Env == "" {
				continue
			}
			if set := s.Scenario.Client.Env[a.Env] == a.EnvValue; set == a.EnvNot {
				t.Errorf("harness/requirement/%s:%d: %s, spec %s: the rule holds with %s (%s), and the spec's client runs with %v",
					requirement.FileName, r.Line, id, s.Name(), a, a.Because, s.Scenario.Client.Env)
			}
		}
	}
}
