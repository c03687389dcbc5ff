package compare

import (
	"fmt"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Width is the width of the rendered reports: they read in a 100-column
// terminal and in CI logs, with no colour.
const Width = 100

// String renders the result: one line when the traces are equal, else the
// first divergence.
func (r Result) String() string {
	if r.Equal() {
		return fmt.Sprintf("traces agree: %d events in %d lanes", r.Events, r.Lanes)
	}
	s := r.Divergence.String()
	if n := r.DivergentLanes - 1; n > 0 {
		s += fmt.Sprintf("(%d more %s also differ.)\n", n, plural(n, "lane", "lanes"))
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// String renders the divergence for a terminal: a headline, what was
// expected and what was seen, why they differ, then the lane's events
// around the divergence, golden above observed, the divergent one marked
// with '>'.
func (d *Divergence) String() string {
	var b strings.Builder
	line := func(format string, args ...any) {
		b.WriteString(clip(fmt.Sprintf(format, args...)) + "\n")
	}
	line("first divergence at %s in lane %s%s: %s",
		trace.FormatT(d.At), d.Lane, d.observedName(), d.Diff)
	line("  expected  %s", eventOrEnd(d.Expected, d.Golden))
	line("  seen      %s", eventOrEnd(d.Seen, d.Observed))
	line("  why       %s", d.why())
	b.WriteString("\n")
	writeContext(&b, "golden", d.Lane, d.Golden, d.GoldenAt)
	writeContext(&b, "observed", orElse(d.ObservedLane, d.Lane), d.Observed, d.ObservedAt)
	return b.String()
}

func (d *Divergence) observedName() string {
	if d.ObservedLane == "" {
		return ""
	}
	return " (observed: " + d.ObservedLane + ")"
}

func (d *Divergence) why() string {
	switch d.Diff {
	case Shifted:
		return fmt.Sprintf("seen %s %s than expected, beyond the tolerance of %s (%s)",
			unsigned(d.Delta), laterOrEarlier(d.Delta), unsigned(d.Tolerance), d.ToleranceFrom)
	case Missing:
		return "the observed lane lacks the expected event"
	case Extra:
		return "the observed lane has an event the golden lane lacks"
	case Changed:
		return "the events differ in " + strings.Join(d.Fields, ", ")
	case Reordered:
		return "both lanes have these events, in another order"
	}
	return ""
}

// eventOrEnd renders e, or says why there is none: the side has no such
// lane (its context is empty) or its lane has ended.
func eventOrEnd(e *trace.Event, context []trace.Event) string {
	switch {
	case e != nil:
		return e.String()
	case len(context) == 0:
		return "(no such lane)"
	}
	return "(the lane has ended)"
}

// writeContext writes the events of one side's lane in aligned columns:
// marker, time, the rest of the event.
func writeContext(b *strings.Builder, side, lane string, evs []trace.Event, mark int) {
	b.WriteString(clip(fmt.Sprintf("  %-8s  lane %s", side, lane)) + "\n")
	for i, e := range evs {
		t, rest, _ := strings.Cut(e.String(), " ")
		b.WriteString(clip(fmt.Sprintf("  %s %9s  %s", marker(i == mark), t, rest)) + "\n")
	}
	switch {
	case len(evs) == 0:
		b.WriteString(fmt.Sprintf("  %s %9s  (no such lane)\n", marker(true), ""))
	case mark == len(evs):
		b.WriteString(fmt.Sprintf("  %s %9s  (the lane has ended)\n", marker(true), ""))
	}
}

func marker(here bool) string {
	if here {
		return ">"
	}
	return " "
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clip cuts a line to Width columns, marking the cut with "…".
func clip(s string) string {
	r := []rune(s)
	if len(r) <= Width {
		return s
	}
	return string(r[:Width-1]) + "…"
}

func unsigned(d time.Duration) string { return trace.FormatT(abs(d))[1:] }

func laterOrEarlier(d time.Duration) string {
	if d < 0 {
		return "earlier"
	}
	return "later"
}
