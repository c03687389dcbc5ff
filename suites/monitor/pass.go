package monitor

import (
	"slices"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// firstPass is pick_first's first Happy Eyeballs pass as a trace shows it
// (A61, Happy Eyeballs in the pick_first LB Policy): from the first
// address list that is not empty until the channel first reports
// TRANSIENT_FAILURE, or READY over a connection an attempt of the pass
// made, or another list arrives, or the trace ends.
type firstPass struct {
	update   trace.Event   // the list's resolver update
	from, to time.Duration // the pass's span
	addrs    []string      // the list, flattened (spec.Flatten)
	// attempts are the first connection attempt to each address of the
	// list within the pass, in time order.
	attempts []trace.Event
}

// passOf finds tr's first pass, or says why there is none.
func passOf(tr *trace.Trace) (firstPass, string) {
	ups := spec.ResolverUpdates(tr)
	i := slices.IndexFunc(ups, func(e trace.Event) bool { return len(spec.Flatten(e)) > 0 })
	if i < 0 {
		return firstPass{}, "the client was never given an address"
	}
	p := firstPass{update: ups[i], from: ups[i].T, to: tr.Events[len(tr.Events)-1].T, addrs: spec.Flatten(ups[i])}
	if i+1 < len(ups) {
		p.to = ups[i+1].T
	}
	for _, e := range spec.ChannelStates(tr) {
		if e.T >= p.from && e.T <= p.to && (e.State == "TRANSIENT_FAILURE" || e.State == "READY" && connected(tr, p.from, e.T)) {
			p.to = e.T
			break
		}
	}
	seen := map[string]bool{}
	for _, e := range spec.Attempts(trace.Window(tr.Events, p.from, p.to+1)) {
		if slices.Contains(p.addrs, e.Addr) && !seen[e.Addr] {
			seen[e.Addr] = true
			p.attempts = append(p.attempts, e)
		}
	}
	return p, ""
}

// connected reports whether an attempt made in [from, to] was answered
// (a SYN-ACK to an address after a SYN to it) by to: a READY without one
// is not the pass's.
func connected(tr *trace.Trace, from, to time.Duration) bool {
	evs := trace.Window(tr.Events, from, to+1)
	for _, ack := range trace.Select(evs, trace.OfKind(trace.KindSYNACK)) {
		if len(spec.AttemptsTo(trace.Window(evs, from, ack.T+1), ack.Addr)) > 0 {
			return true
		}
	}
	return false
}

// failedBy is when the attempt a of a pass failed, as the trace shows it
// (spec.ConnectionFailures: the policy's subchannel reports, or the
// capture's refusals), at or after a and before `by`; -1 if it did not.
func failedBy(tr *trace.Trace, a trace.Event, by time.Duration) time.Duration {
	for _, t := range spec.ConnectionFailures(tr, a.Addr) {
		if t >= a.T && t < by {
			return t
		}
	}
	return -1
}

// answeredBy is when the attempt a was answered (its SYN-ACK), before
// `by`; -1 if it was not.
func answeredBy(tr *trace.Trace, a trace.Event, by time.Duration) time.Duration {
	for _, e := range spec.Of(tr, trace.KindSYNACK) {
		if e.Addr == a.Addr && e.T >= a.T && e.T < by {
			return e.T
		}
	}
	return -1
}
