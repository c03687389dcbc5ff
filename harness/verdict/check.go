package verdict

import (
	"fmt"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
)

// Check asserts one requirement on a trace. Assert uses g (never the global
// Gomega), so the same check runs under Ginkgo and under `conform run`.
type Check struct {
	Requirement string // a catalogue ID
	Assert      func(g gomega.Gomega, tr *trace.Trace)
	// Needs names the sources of evidence the check reads beyond what any
	// implementation's trace has (the capture, the backends, the driver's
	// channel states and RPC results): usually trace.SourcePolicy, the
	// policy's own events, which only implementations that expose them
	// (the reference, through the recorder) record. On a trace without
	// them, the verdict is not-applicable, with the reason.
	Needs []trace.Source
}

// Evaluate runs every check on tr and returns one result per check, about s:
// pass; fail with Gomega's message (or the panic) as evidence; or
// not-applicable when tr lacks the evidence the check needs.
func Evaluate(s Subject, checks []Check, tr *trace.Trace) []Result {
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		r := s.result(c.Requirement, Pass, "")
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
