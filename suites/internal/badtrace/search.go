package badtrace

import (
	"bytes"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/internal/mutate"
	"github.com/conformlab/conform/suites/spec"
)

// Found is the bad trace chosen for a check: the mutation, the trace it
// makes, the check's fail on it, and the spec's other checks that do not
// pass on it either.
type Found struct {
	Check      Check
	Mutation   mutate.Mutation
	Trace      *trace.Trace
	Result     verdict.Result
	Collateral []string // the other checks' keys
}

// Search looks for c's bad trace among the mutations of its golden trace
// for mode m. A mutation qualifies when c fails on it (a fail of the
// check's own, not a panic) and the trace it makes is one trace.Read reads
// back. The mutations the check's hints name come first: when one of them
// qualifies, the choice is among them. Otherwise every candidate is tried
// in the families' order, most specific first. Of the qualifying ones, the
// first to leave every other check of the spec passing wins, else the first
// of those that break the fewest others (checks of the spec that do not
// pass on the golden trace are not counted).
func Search(golden *trace.Trace, c Check, m trace.Mode) (Found, bool) {
	var others []Check
	for _, o := range Checks([]spec.Spec{c.Spec}) {
		if o.Index != c.Index && o.Judge(golden, m).Verdict == verdict.Pass {
			others = append(others, o)
		}
	}
	hinted, rest := split(mutate.Candidates(golden), hints[c.Key()])
	if f, ok := choose(golden, c, m, others, hinted); ok {
		return f, true
	}
	return choose(golden, c, m, others, rest)
}

// choose returns the best of cands for c, as Search says.
func choose(golden *trace.Trace, c Check, m trace.Mode, others []Check, cands []mutate.Mutation) (Found, bool) {
	var best Found
	found := false
	for _, mu := range cands {
		bad, err := Make(golden, c, mu)
		if err != nil {
			continue
		}
		r := c.Judge(bad, m)
		if !Fails(r) || !readsBack(bad) {
			continue
		}
		var coll []string
		for _, o := range others {
			if o.Judge(bad, m).Verdict != verdict.Pass {
				coll = append(coll, o.Key())
			}
		}
		if !found || len(coll) < len(best.Collateral) {
			best, found = Found{Check: c, Mutation: mu, Trace: bad, Result: r, Collateral: coll}, true
		}
		if len(coll) == 0 {
			break
		}
	}
	return best, found
}

// Hinted reports whether id is one of the mutations c's hints name.
func Hinted(c Check, id string) bool {
	return slices.ContainsFunc(hints[c.Key()], func(h string) bool { return matches(id, h) })
}

// Hints are the keys of the checks that have hints.
func Hints() []string {
	var out []string
	for k := range hints {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// split puts apart the candidates hints name, in the hints' order, and
// the rest, in their own.
func split(cands []mutate.Mutation, hints []string) (hinted, rest []mutate.Mutation) {
	taken := make([]bool, len(cands))
	for _, h := range hints {
		for i, m := range cands {
			if !taken[i] && matches(m.ID, h) {
				taken[i] = true
				hinted = append(hinted, m)
			}
		}
	}
	for i, m := range cands {
		if !taken[i] {
			rest = append(rest, m)
		}
	}
	return hinted, rest
}

// matches reports whether a mutation's ID is one a hint names: the ID
// itself (ending in "]"), or the beginning of IDs ("shift-attempt[2,").
func matches(id, hint string) bool {
	if strings.HasSuffix(hint, "]") {
		return id == hint
	}
	return strings.HasPrefix(id, hint)
}

// readsBack reports whether tr is a trace the strict reader takes: written
// in canonical form, it reads back to the same bytes.
func readsBack(tr *trace.Trace) bool {
	b, err := trace.Canonical(tr)
	if err != nil {
		return false
	}
	again, err := trace.Read("bad", bytes.NewReader(b))
	if err != nil {
		return false
	}
	b2, err := trace.Canonical(again)
	return err == nil && bytes.Equal(b, b2)
}
