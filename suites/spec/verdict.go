package spec

import (
	"fmt"
	"strings"

	"github.com/onsi/gomega"

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

// Result is the verdict on one requirement in one spec and mode.
type Result struct {
	Spec        string     `json:"spec"`
	Doc         string     `json:"doc"`
	Requirement string     `json:"requirement"`
	Mode        trace.Mode `json:"mode"`
	Verdict     Verdict    `json:"verdict"`
	Evidence    string     `json:"evidence,omitempty"` // why it failed, or the reason for n/a and error
}

// Evaluate runs every check of s on tr and returns one result per check.
func Evaluate(s Spec, mode trace.Mode, tr *trace.Trace) []Result {
	out := make([]Result, 0, len(s.Checks))
	for _, c := range s.Checks {
		r := Result{Spec: s.Name(), Doc: string(s.Doc), Requirement: c.Requirement, Mode: mode, Verdict: Pass}
		if missing := lacking(c.Needs, tr); missing != "" {
			r.Verdict = NotApplicable
			r.Evidence = fmt.Sprintf("the check reads %s events, and %s's trace has none (it does not expose them)", missing, tr.Header.Impl)
		} else if msg := assert(c, tr); msg != "" {
			r.Verdict, r.Evidence = Fail, msg
		}
		out = append(out, r)
	}
	return out
}

// lacking names the first source in needs of which tr has no event.
func lacking(needs []trace.Source, tr *trace.Trace) string {
	for _, src := range needs {
		if len(trace.Select(tr.Events, trace.FromSource(src))) == 0 {
			return string(src)
		}
	}
	return ""
}

// Broken gives every requirement of s the same verdict (Error,
// NotApplicable, or Fail for a crashed implementation) with one reason.
func Broken(s Spec, mode trace.Mode, v Verdict, reason string) []Result {
	var out []Result
	for _, id := range s.Requirements() {
		out = append(out, Result{Spec: s.Name(), Doc: string(s.Doc), Requirement: id, Mode: mode, Verdict: v, Evidence: reason})
	}
	return out
}

// failure carries a Gomega failure out of a check by panicking.
type failure struct{ msg string }

// assert runs one check with a Gomega whose failures end the check; it
// returns the failure message, or "" when the check passed. A check that
// panics for another reason fails with the panic as evidence.
func assert(c Check, tr *trace.Trace) (msg string) {
	g := gomega.NewGomega(func(message string, _ ...int) { panic(failure{message}) })
	defer func() {
		switch r := recover().(type) {
		case nil:
		case failure:
			msg = r.msg
		default:
			msg = fmt.Sprintf("check panicked: %v", r)
		}
	}()
	c.Assert(g, tr)
	return ""
}

// Failed returns the results that are not passes, rendered one per
// paragraph, for a test failure message.
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
