package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
)

// Check asserts one requirement on a trace. Assert uses g (never the global
// Gomega), so the same check runs under Ginkgo and under `conform run`. A
// Gomega failure fails the check as Deviates; NoSign fails it as Absent;
// Require ends it inconclusive, when a precondition of the check did not
// hold in the run.
type Check struct {
	Requirement string // a catalogue ID
	// Name tells the check from the requirement's other checks in the
	// same spec; reports name its row "<requirement> · <name>". Without a
	// name, such a check is numbered ("#2").
	Name string
	// Monitor is the name of the requirement monitor (suites/monitor) the
	// check runs, when it runs one: its row is "monitor <name>".
	Monitor string
	Assert  func(g gomega.Gomega, tr *trace.Trace)
	// Needs names the sources of evidence the check reads beyond what any
	// implementation's trace has (the capture, the backends, the driver's
	// channel states and RPC results): usually trace.SourcePolicy, the
	// policy's own events, which only implementations that expose them
	// (the reference, through the recorder) record. On a trace without
	// them, the verdict is not-applicable, with the reason. A check that
	// needs trace.SourceBackend gives no result in the simulator, which has
	// no backends.
	Needs []trace.Source
}

// Evaluate runs every check on tr and returns one result per check, about s:
// pass; fail (of the kind the check found) with Gomega's message (or the
// panic) as evidence; inconclusive with the precondition that did not hold;
// or not-applicable when the catalogue scopes the requirement away from the
// run (OutOfScope) or tr lacks the evidence the check needs.
func Evaluate(s Subject, checks []Check, tr *trace.Trace) []Result {
	out := make([]Result, 0, len(checks))
	names := CheckNames(checks)
	for i, c := range checks {
		if neverRecorded(c.Needs, s.Mode) {
			continue
		}
		r := s.result(c.Requirement, Pass, "")
		r.Check = names[i]
		if reason := OutOfScope(c.Requirement, tr.Header); reason != "" {
			r.Verdict, r.Evidence = NotApplicable, reason
		} else if missing := lacking(c.Needs, tr); missing != "" {
			r.Verdict = NotApplicable
			r.Evidence = fmt.Sprintf("the check reads %s events, and %s's trace has none (it does not expose them)", missing, tr.Header.Impl)
		} else {
			r.Verdict, r.Kind, r.Evidence = assert(c, tr)
		}
		out = append(out, r)
	}
	return out
}

// OutOfScope says why the document scopes requirement id away from the run
// h describes (requirement.Applies: the implementation's language, its
// driver's capabilities, the client's switches), or "" when the rule
// applies to it, or id is not in the catalogue. The reference is never out
// of scope.
func OutOfScope(id string, h trace.Header) string {
	r, ok := requirement.ByID(id)
	if !ok {
		return ""
	}
	run := requirement.Run{Impl: h.Impl}
	if can := h.Env[trace.EnvDriverCan]; can != "" {
		run.Can = strings.Split(can, ",")
	}
	if h.Scenario != nil {
		run.Env = h.Scenario.Client.Env
	}
	return r.Applies.OutOfScope(run)
}

// Scope makes not-applicable, with the reason, each result of rs whose
// requirement is out of the scope of the run h describes and that says
// something of the implementation (a pass or a fail, a crash among them):
// a rule that is not the implementation's is never passed or failed.
// Errors (conform or a driver broke) and not-applicable stay as they are.
func Scope(rs []Result, h trace.Header) []Result {
	out := make([]Result, len(rs))
	for i, r := range rs {
		if r.Verdict == Pass || r.Verdict == Fail || r.Verdict == Inconclusive {
			if reason := OutOfScope(r.Requirement, h); reason != "" {
				r.Verdict, r.Kind, r.Evidence = NotApplicable, "", reason
			}
		}
		out[i] = r
	}
	return out
}

// CheckNames names each check for its row: its Name; a monitor's
// "monitor <its name>"; "" when it is its requirement's only check beside
// any monitors; else "#n", its place among the requirement's checks that
// are no monitor's (a monitor added to a spec renames no other check).
func CheckNames(checks []Check) []string {
	per := map[string]int{}
	for _, c := range checks {
		if c.Monitor == "" {
			per[c.Requirement]++
		}
	}
	seen := map[string]int{}
	out := make([]string, len(checks))
	for i, c := range checks {
		if c.Monitor == "" {
			seen[c.Requirement]++
		}
		switch {
		case c.Name != "":
			out[i] = c.Name
		case c.Monitor != "":
			out[i] = "monitor " + c.Monitor
		case per[c.Requirement] > 1:
			out[i] = fmt.Sprintf("#%d", seen[c.Requirement])
		}
	}
	return out
}

// lacking names the first source in needs of which tr has no event.
// neverRecorded reports whether a check needs evidence that no trace of mode
// m carries, whatever the implementation: the simulator has no backends. It
// gives no result there at all (the lab judges it), rather than a
// not-applicable that would say the implementation hid something.
func neverRecorded(needs []trace.Source, m trace.Mode) bool {
	return m == trace.ModeSim && slices.Contains(needs, trace.SourceBackend)
}

func lacking(needs []trace.Source, tr *trace.Trace) string {
	for _, src := range needs {
		if len(trace.Select(tr.Events, trace.FromSource(src))) == 0 {
			return string(src)
		}
	}
	return ""
}

// failure carries a check's end out of it by panicking: a Gomega failure
// or NoSign (a fail of its kind), or Require (a precondition).
type failure struct {
	verdict Verdict
	kind    Kind
	msg     string
}

// NoSign ends the check failed, of kind Absent: there is no sign of the
// behaviour at all in the run (no second attempt within the window, no
// NACK). Call it from a check's Assert only.
func NoSign(format string, args ...any) {
	panic(failure{Fail, Absent, fmt.Sprintf(format, args...)})
}

// PassWith ends the check passed, with what it observed as the evidence:
// a value the document only recommends (A62's 30-minute idle timeout),
// which a report shows beside the pass. Call it from a check's Assert
// only, once it has judged everything.
func PassWith(format string, args ...any) {
	panic(failure{Pass, "", fmt.Sprintf(format, args...)})
}

// Require ends the check inconclusive unless the precondition holds: the
// reason says which precondition did not hold in the run. Call it from a
// check's Assert only, before the check judges anything.
func Require(holds bool, format string, args ...any) {
	if !holds {
		panic(failure{Inconclusive, "", fmt.Sprintf(format, args...)})
	}
}

// assert runs one check with a Gomega whose failures end the check (as
// Deviates); it returns the verdict, the kind of a fail and the evidence. A
// check that panics for another reason fails with the panic as evidence.
func assert(c Check, tr *trace.Trace) (v Verdict, k Kind, msg string) {
	g := gomega.NewGomega(func(message string, _ ...int) { panic(failure{Fail, Deviates, message}) })
	defer func() {
		switch r := recover().(type) {
		case nil:
		case failure:
			v, k, msg = r.verdict, r.kind, r.msg
		default:
			v, k, msg = Fail, Deviates, fmt.Sprintf("check panicked: %v", r)
		}
	}()
	c.Assert(g, tr)
	return Pass, "", ""
}

// Precondition runs f, which states preconditions (Require), and returns
// "" when they held or the reason of the first that did not, instead of
// ending the check: a check that judges several items (each gap between
// attempts, each RPC) leaves out those whose preconditions fail and
// judges the rest. Anything else that ends f (a Gomega failure, NoSign,
// a panic) goes on ending the check.
func Precondition(f func()) (reason string) {
	defer func() {
		if r := recover(); r != nil {
			if fl, ok := r.(failure); ok && fl.verdict == Inconclusive {
				reason = fl.msg
				return
			}
			panic(r)
		}
	}()
	f()
	return ""
}
