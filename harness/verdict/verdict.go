// Package verdict judges traces: a Check asserts one requirement of the
// catalogue on a trace, and Evaluate gives each check a Verdict with its
// evidence (DESIGN.md, "How a verdict is reached").
//
// It sits below the suites and the reports: suites/spec writes its checks
// with it, harness/report prints its results. It imports the trace and
// requirement formats (the catalogue says where a document scopes a rule)
// and Gomega, and nothing that runs a scenario.
package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/trace"
)

// Verdict is the closed set of outcomes of checking one requirement
// (DESIGN.md, "Vocabulary"). Never a silent skip.
type Verdict string

// The verdicts.
const (
	Pass Verdict = "pass"
	// Fail is a fail with its Kind and the evidence (a crash of the
	// implementation is evidence too).
	Fail Verdict = "fail"
	// Inconclusive: a precondition of the check did not hold in this run,
	// with the reason; the run says nothing of the requirement.
	Inconclusive Verdict = "inconclusive"
	// NotApplicable, with the reason: the implementation cannot express the
	// scenario, or the document scopes the rule away from it.
	NotApplicable Verdict = "not-applicable"
	// Error: conform or a driver broke.
	Error Verdict = "error"
)

// Verdicts are the verdicts, in the order reports list them.
var Verdicts = []Verdict{Pass, Fail, Inconclusive, NotApplicable, Error}

// Known reports whether v is one of the verdicts.
func (v Verdict) Known() bool { return slices.Contains(Verdicts, v) }

// Kind is the kind of a fail (DESIGN.md, "Vocabulary").
type Kind string

// The kinds of fail.
const (
	// Absent: no sign of the behaviour at all (no second attempt within
	// the window, no NACK).
	Absent Kind = "absent"
	// Deviates: the behaviour is there, done differently (the default).
	Deviates Kind = "deviates"
	// Crash: the implementation crashed during the run.
	Crash Kind = "crash"
)

// GoldenTrace is the row of the reference's one verdict on its golden
// trace: a run whose trace differs from it fails there, once, with the first
// differing event (it is never a third party's verdict).
const GoldenTrace = "golden-trace"

// Result is the verdict of one check of a requirement in one spec and mode.
type Result struct {
	Spec        string     `json:"spec"`
	Doc         string     `json:"doc"`
	Requirement string     `json:"requirement"`
	Check       string     `json:"check,omitempty"` // the check's name, when the requirement has several in the spec
	Mode        trace.Mode `json:"mode"`
	Verdict     Verdict    `json:"verdict"`
	Kind        Kind       `json:"kind,omitempty"`     // with Fail
	Evidence    string     `json:"evidence,omitempty"` // why it failed, or the reason for inconclusive, n/a and error; on a pass, what it observed when the check says (PassWith)
}

// Row names the result's row in a report: its requirement, and its check
// when it has a name.
func (r Result) Row() string {
	if r.Check == "" {
		return r.Requirement
	}
	return r.Requirement + " · " + r.Check
}

// Subject is what a set of results is about: one spec of a document, run in
// one mode. Every result of Evaluate and Broken names it.
type Subject struct {
	Spec string // the scenario's name
	Doc  string // the document, "A61"
	Mode trace.Mode
}

func (s Subject) result(requirement string, v Verdict, evidence string) Result {
	return Result{Spec: s.Spec, Doc: s.Doc, Requirement: requirement, Mode: s.Mode, Verdict: v, Evidence: evidence}
}

// CrashRow is the row of a run in which the implementation crashed: one
// fail of kind Crash, whatever requirements the spec checks.
const CrashRow = "crash"

// Broken gives every requirement in ids the same verdict (Error or
// NotApplicable) with one reason: the run broke before there was a trace to
// judge.
func Broken(s Subject, ids []string, v Verdict, reason string) []Result {
	var out []Result
	for _, id := range ids {
		out = append(out, s.result(id, v, reason))
	}
	return out
}

// Crashed is the verdicts of a run in which the implementation crashed: one
// behaviour, one fail row of kind Crash (CrashRow) with the evidence; the
// requirements in ids were not seen through, so each is inconclusive.
func Crashed(s Subject, ids []string, evidence string) []Result {
	crash := s.result(CrashRow, Fail, evidence)
	crash.Kind = Crash
	out := []Result{crash}
	for _, id := range ids {
		out = append(out, s.result(id, Inconclusive, "the implementation crashed during the run (see the crash row): the requirement was not seen through"))
	}
	return out
}

// Failed returns the results that are not passes, rendered one per
// paragraph, for a test failure message or a report's evidence.
func Failed(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		if r.Verdict != Pass {
			fmt.Fprintf(&b, "%s [%s] %s: %s\n%s\n\n", r.Row(), r.Mode, r.Spec, r.Label(), indent(r.Evidence))
		}
	}
	return b.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// Label is the verdict as reports print it: a fail with its kind
// ("fail (absent)").
func (r Result) Label() string {
	if r.Verdict == Fail && r.Kind != "" {
		return fmt.Sprintf("%s (%s)", r.Verdict, r.Kind)
	}
	return string(r.Verdict)
}
