package a61

import (
	"fmt"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// attempts are tr's connection attempts (spec.Attempts) from `from` on.
func attempts(tr *trace.Trace, from time.Duration) []trace.Event {
	return trace.Select(spec.Attempts(tr.Events), func(e trace.Event) bool { return e.T >= from })
}

// attemptsTo are the times of the connection attempts to addr from `from`
// on.
func attemptsTo(tr *trace.Trace, addr string, from time.Duration) []time.Duration {
	var out []time.Duration
	for _, e := range spec.AttemptsTo(attempts(tr, from), addr) {
		out = append(out, e.T)
	}
	return out
}

// absentUnlessAttempted ends the check failed, of kind absent, when the run
// shows no connection attempt to addr from `from` on: no sign of what was
// to start it (a Connection Attempt Delay that never fires), rather than an
// attempt made otherwise.
func absentUnlessAttempted(tr *trace.Trace, addr string, from time.Duration, what string) {
	if len(attemptsTo(tr, addr, from)) == 0 {
		verdict.NoSign("no connection attempt to %s in the run (from %v on): %s", addr, from, what)
	}
}

// order is the addresses of as in order of their first attempt, each once.
func order(as []trace.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range as {
		if !seen[a.Addr] {
			seen[a.Addr] = true
			out = append(out, a.Addr)
		}
	}
	return out
}

// addrs turns symbolic addresses into tr's concrete ones.
func addrs(tr *trace.Trace, as ...scenario.Addr) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = spec.Addr(tr, a)
	}
	return out
}

// updates are tr's resolver updates (spec.ResolverUpdates).
func updates(tr *trace.Trace) []trace.Event { return spec.ResolverUpdates(tr) }

// nthUpdate is the time of tr's n-th resolver update (1-based).
func nthUpdate(tr *trace.Trace, n int) time.Duration {
	ups := updates(tr)
	if len(ups) < n {
		panic(fmt.Sprintf("the trace has %d resolver updates, not %d", len(ups), n))
	}
	return ups[n-1].T
}

// connectionsPerBackend counts, per backend, the connections it accepted:
// the backends' accept events in the lab; in the simulator, which has no
// backend events, the SYN-ACKs (a TCP connection established) per backend
// owning the address.
func connectionsPerBackend(tr *trace.Trace) map[string]int {
	n := map[string]int{}
	if tr.Header.Mode == spec.Lab {
		for _, e := range spec.Of(tr, trace.KindAccept) {
			n[e.Backend]++
		}
		return n
	}
	sym := tr.Header.Scenario.Symbolic(runner.AddrOf)
	for _, e := range spec.Of(tr, trace.KindSYNACK) {
		if b, _, ok := sym[e.Addr].Split(); ok {
			n[b]++
		}
	}
	return n
}

// firstPassSYNs selects the connection attempts made before cut: the part
// of a run where the simulator and the lab take the same decisions. Later
// retries follow each subchannel's backoff, whose jitter is seeded in the
// simulator and random in grpc-go's subchannels.
func firstPassSYNs(cut time.Duration) *compare.Options {
	return &compare.Options{
		Select: []trace.Pred{trace.OfKind(trace.KindSYN), func(e trace.Event) bool { return e.T < cut && !e.Retransmit }},
		Ignore: []string{"peer", "backend"}, Tolerance: labSlack,
	}
}
