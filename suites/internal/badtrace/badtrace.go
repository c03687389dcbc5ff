// Package badtrace keeps a known-bad trace for every check of the suites
// (DESIGN.md, "How a verdict is reached": each check has a known-good and a
// known-bad trace, and a check that cannot fail is a defect). The known-good
// trace is a spec's golden trace; the known-bad one is that golden trace
// changed by one named mutation (suites/internal/mutate) on which the check
// fails. The generator (cmd/badtraces) searches the mutations for each check
// and writes the bad traces under traces/bad/ with an index; the package's
// test runs every check on its pair.
package badtrace

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/a56"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/a62"
	"github.com/conformlab/conform/suites/a75"
	"github.com/conformlab/conform/suites/internal/mutate"
	"github.com/conformlab/conform/suites/l9"
	"github.com/conformlab/conform/suites/spec"
)

// Specs are the specs of every suite, in the catalogue's order of documents.
func Specs() []spec.Spec {
	var out []spec.Spec
	for _, specs := range [][]spec.Spec{a56.Specs(), a61.Specs(), a62.Specs(), a75.Specs(), l9.Specs()} {
		out = append(out, specs...)
	}
	return out
}

// Check is one check of one spec.
type Check struct {
	Spec  spec.Spec
	Index int    // its place in Spec.Checks
	Name  string // its row's name: "" when it is its requirement's only check in the spec, else its Name or "#n"
}

// Checks lists every check of specs, in order.
func Checks(specs []spec.Spec) []Check {
	var out []Check
	for _, s := range specs {
		names := verdict.CheckNames(s.Checks)
		for i := range s.Checks {
			out = append(out, Check{Spec: s, Index: i, Name: names[i]})
		}
	}
	return out
}

// Of is the verdict.Check itself.
func (c Check) Of() verdict.Check { return c.Spec.Checks[c.Index] }

// Requirement is the requirement the check is tied to.
func (c Check) Requirement() string { return c.Of().Requirement }

// BlackBox reports whether the check judges any implementation's trace: it
// does not need the policy's own events.
func (c Check) BlackBox() bool { return !slices.Contains(c.Of().Needs, trace.SourcePolicy) }

// Doc is the spec's document in lower case, the traces' directory: "a61".
func (c Check) Doc() string { return strings.ToLower(string(c.Spec.Doc)) }

// Key names the check in the index and in MISSING.md:
// "a61/he-dropped-ipv6 A61-HE-DELAY-DEFAULT", "… A62-TF-PICKS #2".
func (c Check) Key() string {
	k := c.Doc() + "/" + c.Spec.Name() + " " + c.Requirement()
	if c.Name != "" {
		k += " " + c.Name
	}
	return k
}

// File is the check's bad trace for mode m, relative to the traces
// directory: bad/<doc>/<spec>.<requirement>[.<check>].<mode>.jsonl, the
// check's name without its "#", spaces as dashes.
func (c Check) File(m trace.Mode) string {
	stem := c.Spec.Name() + "." + c.Requirement()
	if c.Name != "" {
		stem += "." + strings.ReplaceAll(strings.TrimPrefix(c.Name, "#"), " ", "-")
	}
	return filepath.Join("bad", c.Doc(), stem+"."+string(m)+".jsonl")
}

// Judge runs the check alone on tr.
// A check that mode m never judges (it reads the backends, and m is the
// simulator) is not-applicable.
func (c Check) Judge(tr *trace.Trace, m trace.Mode) verdict.Result {
	rs := verdict.Evaluate(c.Spec.Subject(m), []verdict.Check{c.Of()}, tr)
	if len(rs) == 0 {
		return verdict.Result{Spec: c.Spec.Name(), Doc: string(c.Spec.Doc), Requirement: c.Requirement(), Mode: m,
			Verdict: verdict.NotApplicable, Evidence: "the simulator has no backends to judge this check by"}
	}
	return rs[0]
}

// Fails reports whether r is a fail the check itself found: a Gomega
// failure or NoSign, not a panic of the check's code on a trace it could
// not read.
func Fails(r verdict.Result) bool {
	return r.Verdict == verdict.Fail && !strings.HasPrefix(r.Evidence, "check panicked")
}

// The header of a bad trace says what it is in its scenario's description:
// the golden trace's description, then this marker, the check, the
// mutation's ID and its description.
const marker = " — bad trace for "

var markerRE = regexp.MustCompile(regexp.QuoteMeta(marker) + `(.+?): mutation (\S+): `)

// Describe returns the header of a bad trace for c made from golden by m:
// golden's, with a copy of its scenario whose description says so.
func Describe(golden *trace.Trace, c Check, m mutate.Mutation) trace.Header {
	h := golden.Header
	s := *h.Scenario
	s.Description = fmt.Sprintf("%s%s%s: mutation %s: %s", s.Description, marker, c.Key(), m.ID, m.Description)
	h.Scenario = &s
	return h
}

// MutationOf reads back the check key and the mutation ID a bad trace's
// header records.
func MutationOf(tr *trace.Trace) (key, id string, ok bool) {
	if tr.Header.Scenario == nil {
		return "", "", false
	}
	m := markerRE.FindStringSubmatch(tr.Header.Scenario.Description)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Make applies m to golden and returns the bad trace for c.
func Make(golden *trace.Trace, c Check, m mutate.Mutation) (*trace.Trace, error) {
	bad, err := m.Apply(golden)
	if err != nil {
		return nil, err
	}
	bad.Header = Describe(golden, c, m)
	return bad, nil
}

// Golden reads s's golden trace for mode m under tracesDir.
func Golden(tracesDir string, s spec.Spec, m trace.Mode) (*trace.Trace, error) {
	return trace.ReadFile(spec.GoldenPath(tracesDir, s, m))
}
