// Package verdict judges traces: a Check asserts one requirement of the
// catalogue on a trace, and Evaluate gives each check a Verdict with its
// evidence (DESIGN.md, "How a verdict is reached").
//
// It sits below the suites and the reports: suites/spec writes its checks
// with it, harness/report prints its results. It imports the trace format
// and Gomega, and nothing that runs a scenario.
package verdict

import (
	"fmt"
	"strings"

	"github.com/conformlab/conform/harness/trace"
)

// Verdict is the closed set of outcomes of checking one requirement
// (DESIGN.md, "Vocabulary"). Never a silent skip.
type Verdict string

// The verdicts.
const (
	Pass          Verdict = "pass"
	Fail          Verdict = "fail"           // with the evidence (a crash of the impl is evidence too)
	NotApplicable Verdict = "not-applicable" // with the reason: the impl cannot express the scenario
	Error         Verdict = "error"          // the driver or the harness broke, or the impl in a way that is not a crash
)

// Known reports whether v is one of the four verdicts.
func (v Verdict) Known() bool {
	switch v {
	case Pass, Fail, NotApplicable, Error:
		return true
	}
	return false
}

// Result is the verdict on one requirement in one spec and mode.
type Result struct {
	Spec        string     `json:"spec"`
	Doc         string     `json:"doc"`
	Requirement string     `json:"requirement"`
	Mode        trace.Mode `json:"mode"`
	Verdict     Verdict    `json:"verdict"`
	Evidence    string     `json:"evidence,omitempty"` // why it failed, or the reason for n/a and error
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

// Broken gives every requirement in ids the same verdict (Error,
// NotApplicable, or Fail for a crashed implementation) with one reason: the
// run broke before there was a trace to judge.
func Broken(s Subject, ids []string, v Verdict, reason string) []Result {
	var out []Result
	for _, id := range ids {
		out = append(out, s.result(id, v, reason))
	}
	return out
}

// Failed returns the results that are not passes, rendered one per
// paragraph, for a test failure message or a report's evidence.
func Failed(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		if r.Verdict != Pass {
			fmt.Fprintf(&b, "%s [%s] %s: %s\n%s\n\n", r.Requirement, r.Mode, r.Spec, r.Verdict, indent(r.Evidence))
		}
	}
	return b.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
