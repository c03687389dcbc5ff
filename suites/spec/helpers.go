package spec

import (
	"strings"
	"time"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// Addr is the concrete address ("ip:port") of a symbolic one ("b1/ipv6")
// in the scenario a trace was recorded from, as every runner derives it.
func Addr(tr *trace.Trace, a scenario.Addr) string {
	c, err := tr.Header.Scenario.Concrete(a, runner.AddrOf)
	if err != nil {
		panic("spec.Addr: " + err.Error())
	}
	return c
}

// Within is the time tolerance of a check: exact in the simulator, lab in
// the lab (wall time, a real kernel and a real channel).
func Within(tr *trace.Trace, lab time.Duration) time.Duration {
	if tr.Header.Mode == Lab {
		return lab
	}
	return 0
}

// Of returns the events of tr with kind k, in time order.
func Of(tr *trace.Trace, ks ...trace.Kind) []trace.Event {
	return trace.Select(tr.Events, trace.OfKind(ks...))
}

// Render lists events one per line, indented, for a failure message:
// "…:%s" with Render(evs) reads "…:" and the events below it, or
// "…: (none)".
func Render(evs []trace.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("\n  " + e.String())
	}
	if b.Len() == 0 {
		return " (none)"
	}
	return b.String()
}

// Times are the events' times (trace.FormatT), for a failure message.
func Times(evs []trace.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = trace.FormatT(e.T)
	}
	return out
}
