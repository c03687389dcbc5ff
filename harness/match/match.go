// Package match holds Gomega matchers over traces ([]trace.Event, or a
// *trace.Trace) for the suites: the order of and gap between connection
// attempts, state sequences, sticky TRANSIENT_FAILURE and the distribution
// of picks.
//
// Each matcher computes in Match only what it needs to decide; its failure
// message is built only on failure, and shows the relevant slice of the
// trace (the events of the lanes involved, around the point of failure,
// one per line as trace.Event.String renders them), not the whole trace.
package match

import (
	"fmt"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// events is what a matcher's actual holds.
func events(matcher string, actual any) ([]trace.Event, error) {
	switch a := actual.(type) {
	case []trace.Event:
		return a, nil
	case *trace.Trace:
		if a == nil {
			return nil, fmt.Errorf("%s: the trace is nil", matcher)
		}
		return a.Events, nil
	case trace.Trace:
		return a.Events, nil
	}
	return nil, fmt.Errorf("%s expects []trace.Event or *trace.Trace, got %T", matcher, actual)
}

// excerptSize is how many events an excerpt shows on each side of the
// point of failure.
const excerptSize = 4

// excerpt renders the events of evs for which keep holds, from a few
// before evs[mark] to a few after it, indented, one per line, evs[mark]
// marked with '>'. A mark of len(evs) points past the end.
func excerpt(evs []trace.Event, keep func(trace.Event) bool, mark int) string {
	var kept []int
	here := -1
	for i, e := range evs {
		if i == mark {
			here = len(kept)
		}
		if keep(e) {
			kept = append(kept, i)
		}
	}
	if len(kept) == 0 {
		return "    (no such events in the trace)\n"
	}
	if here < 0 {
		here = len(kept)
	}
	from, to := max(0, here-excerptSize), min(len(kept), here+excerptSize+1)
	var b strings.Builder
	if from > 0 {
		fmt.Fprintf(&b, "    … %d earlier\n", from)
	}
	for k := from; k < to; k++ {
		fmt.Fprintf(&b, "  %s %s\n", pointer(kept[k] == mark), evs[kept[k]])
	}
	if to < len(kept) {
		fmt.Fprintf(&b, "    … %d later\n", len(kept)-to)
	}
	return b.String()
}

// indexAt is the index of the first event of evs at or after t.
func indexAt(evs []trace.Event, t time.Duration) int {
	for i, e := range evs {
		if e.T >= t {
			return i
		}
	}
	return len(evs)
}

func pointer(here bool) string {
	if here {
		return ">"
	}
	return " "
}

// list renders strings for a message: "a, b, c", or "(none)".
func list(ss []string) string {
	if len(ss) == 0 {
		return "(none)"
	}
	return strings.Join(ss, ", ")
}

// firstDifference is the index of the first place where got and want
// differ (the shorter's length when one is a prefix of the other), or -1.
func firstDifference(got, want []string) int {
	for i := 0; i < len(got) || i < len(want); i++ {
		if i == len(got) || i == len(want) || got[i] != want[i] {
			return i
		}
	}
	return -1
}

func at(ss []string, i int) string {
	if i < len(ss) {
		return ss[i]
	}
	return "nothing"
}
