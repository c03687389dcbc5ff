// Package monitor holds conform's requirement monitors: a requirement that
// is an invariant every trace must keep, judged on any trace with no
// knowledge of the scenario that made it — the suites' traces, a user's
// scenarios (`conform try`), replays and field captures (`conform check`).
//
// A monitor reads the kinds of evidence it names (Needs): a trace that
// cannot show one (a capture has no channel states, no LB config) makes
// it inconclusive, naming what is missing. It applies to some policies
// only, and only when the trace exercises the rule (Applies): otherwise it
// is not applicable, with the reason. Then it judges the trace with the
// preconditions the suites' checks state (spec's helpers: a client that
// sorts its DNS answers, the lab's stall watch, a driver that polls the
// channel's state), and fails with the events that break the rule and
// their times.
//
// The suites run the same monitors where their scenarios exercise them
// (Monitor.Check), so each is judged on golden traces, which it must pass,
// and on known-bad ones (suites/internal/badtrace), which it must fail.
// docs/monitors.md lists them: requirement, monitor, known-bad trace.
package monitor

import (
	"fmt"
	"strings"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// Monitor is one requirement's invariant, judged on any trace.
type Monitor struct {
	Name        string // "sticky-tf": the check's name where a spec runs it
	Requirement string // the catalogue ID
	Invariant   string // what any trace must keep, one line
	// Needs are the kinds of evidence the monitor reads; a trace that
	// does not show one of them leaves it inconclusive.
	Needs []trace.Evidence
	// Applies says why the rule does not apply to the run tr records
	// (another policy; the rule not exercised), or "" when it does.
	Applies func(tr *trace.Trace) string
	// Assert judges tr, as a verdict.Check's Assert does.
	Assert func(g gomega.Gomega, tr *trace.Trace)
	// Unexercised, if set, says why a run the rule does not apply to
	// could not exercise it through the client's own doing under another
	// rule (a channel that left TRANSIENT_FAILURE cannot reconnect in it),
	// or "" when nothing explains it. A spec's check of the monitor is then
	// inconclusive, not a fail: that other rule's check judges it.
	Unexercised func(tr *trace.Trace) string
}

// All are the monitors, in the catalogue's order of documents.
func All() []Monitor {
	return []Monitor{
		FailoverNotBeforeTimer,
		HEAttemptDelay, HEFailureNextAddress, HEInterleave, HENoTFDuringPass, HEPassEndReResolve, HEReResolvePerRound,
		StickyTF, StickyTFBackoff, TFPicks,
	}
}

// ByName is the monitor called name.
func ByName(name string) (Monitor, bool) {
	for _, m := range All() {
		if m.Name == name {
			return m, true
		}
	}
	return Monitor{}, false
}

// Check is the monitor as a check of a spec whose scenario exercises it
// (its row "monitor <name>"); a trace the rule does not apply to fails it as
// absent (the scenario was made to exercise it).
func (m Monitor) Check() spec.Check {
	return spec.Check{Requirement: m.Requirement, Monitor: m.Name, Assert: m.assertExercised}
}

func (m Monitor) assertExercised(g gomega.Gomega, tr *trace.Trace) {
	if why := m.Applies(tr); why != "" {
		if m.Unexercised != nil {
			if because := m.Unexercised(tr); because != "" {
				verdict.Require(false, "the run did not exercise %s: %s", m.Requirement, because)
			}
		}
		verdict.NoSign("the run should exercise %s: %s", m.Requirement, why)
	}
	m.Assert(g, tr)
}

// Judge runs m on tr: inconclusive when tr cannot show what m reads;
// not-applicable when the rule does not apply to the run, or the document
// scopes it away from the implementation (verdict.OutOfScope); else the
// verdict of its Assert. Spec names the trace (its file, or its scenario).
func (m Monitor) Judge(name string, tr *trace.Trace) verdict.Result {
	r := verdict.Result{Spec: name, Requirement: m.Requirement, Check: m.Name, Mode: tr.Header.Mode}
	if req, ok := requirement.ByID(m.Requirement); ok {
		r.Doc = string(req.Doc)
	}
	if missing := m.missing(tr.Header); len(missing) > 0 {
		r.Verdict, r.Evidence = verdict.Inconclusive, "the trace does not show "+strings.Join(missing, ", nor ")+" "+origin(tr.Header)
		return r
	}
	if why := m.Applies(tr); why != "" {
		r.Verdict, r.Evidence = verdict.NotApplicable, why
		return r
	}
	if why := verdict.OutOfScope(m.Requirement, tr.Header); why != "" {
		r.Verdict, r.Evidence = verdict.NotApplicable, why
		return r
	}
	got := verdict.Evaluate(verdict.Subject{Spec: name, Doc: r.Doc, Mode: r.Mode}, []verdict.Check{{Requirement: m.Requirement, Assert: m.Assert}}, tr)
	r.Verdict, r.Kind, r.Evidence = got[0].Verdict, got[0].Kind, got[0].Evidence
	return r
}

// JudgeAll runs every monitor on tr.
func JudgeAll(name string, tr *trace.Trace) []verdict.Result {
	var out []verdict.Result
	for _, m := range All() {
		out = append(out, m.Judge(name, tr))
	}
	return out
}

// missing says what of m.Needs a trace with header h cannot show.
func (m Monitor) missing(h trace.Header) []string {
	var out []string
	for _, e := range m.Needs {
		if !h.Has(e) {
			out = append(out, e.About())
		}
	}
	return out
}

// origin says where a trace came from, for a reason.
func origin(h trace.Header) string {
	o, shows := h.Provenance()
	what := make([]string, len(shows))
	for i, e := range shows {
		what[i] = string(e)
	}
	from := "(a trace that does not say where it came from"
	if o != "" {
		from = fmt.Sprintf("(a %s trace", o)
	}
	return fmt.Sprintf("%s, showing %s)", from, strings.Join(what, ", "))
}

// broken fails a monitor with its message as the whole of the failure: the
// rule, and the events that break it, one per line.
type broken struct{ msg string }

func (b broken) Match(any) (bool, error)          { return false, nil }
func (b broken) FailureMessage(any) string        { return b.msg }
func (b broken) NegatedFailureMessage(any) string { return b.msg }

// breaches collects what breaks a rule, and fails the monitor with all of
// it at the end.
type breaches struct {
	rule string
	what []string
}

// add records one breach: what happened, and the events that show it.
func (b *breaches) add(format string, args ...any) {
	b.what = append(b.what, fmt.Sprintf(format, args...))
}

// addEvents is add with the events rendered below.
func (b *breaches) addEvents(evs []trace.Event, format string, args ...any) {
	b.add("%s:%s", fmt.Sprintf(format, args...), spec.Render(evs))
}

// judge fails the monitor when there was a breach.
func (b *breaches) judge(g gomega.Gomega) {
	if len(b.what) == 0 {
		return
	}
	msg := b.rule + "; broken " + plural(len(b.what), "time") + ":\n" + strings.Join(b.what, "\n")
	g.ExpectWithOffset(1, nil).To(broken{msg})
}

func plural(n int, what string) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// skipped collects the items a monitor could not judge and why; when it
// judged none, it is inconclusive with the reasons.
type skipped struct {
	judged  int
	reasons []string
}

// try judges one item: pre states its preconditions (verdict.Require);
// when they hold, judge runs.
func (s *skipped) try(pre func(), judge func()) {
	if why := verdict.Precondition(pre); why != "" {
		s.reasons = append(s.reasons, why)
		return
	}
	s.judged++
	judge()
}

// require ends the monitor inconclusive when it judged nothing.
func (s *skipped) require() {
	verdict.Require(s.judged > 0 || len(s.reasons) == 0, "%s", strings.Join(s.reasons, "; "))
}
