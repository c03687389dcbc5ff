package a61

import (
	"sort"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// Happy Eyeballs on by default (A61, Temporary environment variable
// protection: Happy Eyeballs "will not be guarded by an environment
// variable"), as a client shows it from outside: in a scenario that sets
// no environment switch (and the runner and drivers pass none of their
// own: harness/driver's driverEnviron strips every GRPC_* setting), the
// first connection attempt still pending, a second address is attempted.
// The delay's value is A61-HE-DELAY-DEFAULT's; this judges only that Happy
// Eyeballs ran.

// defaultDelay is the Connection Attempt Delay with nothing configured
// (A61, Happy Eyeballs in the pick_first LB Policy: 250 ms).
const defaultDelay = 250 * time.Millisecond

// heRun is what a trace shows of Happy Eyeballs' first step: the first
// connection attempt, how long it stayed pending (no SYN-ACK, no failure)
// within the run, and the first attempt to another address while it was
// (ok false when there was none).
type heRun struct {
	first, second trace.Event
	ok            bool
	pending       time.Duration // from the first attempt to its answer, or the run's end
	ended         string        // what ended the pending: "connected", "failed" or "the run's end"
}

// heRunOf reads tr's heRun; the check is inconclusive without any
// connection attempt.
func heRunOf(tr *trace.Trace) heRun {
	as := spec.Attempts(tr.Events)
	verdict.Require(len(as) > 0, "no connection attempt in the run: nothing shows whether Happy Eyeballs runs")
	r := heRun{first: as[0], ended: "the run's end"}
	end := tr.Header.Scenario.End
	if n := len(tr.Events); n > 0 && tr.Events[n-1].T < end {
		end = tr.Events[n-1].T
	}
	for _, e := range spec.Of(tr, trace.KindSYNACK) {
		if e.Addr == r.first.Addr && e.T >= r.first.T && e.T < end {
			end, r.ended = e.T, "connected"
			break
		}
	}
	for _, t := range spec.ConnectionFailures(tr, r.first.Addr) {
		if t >= r.first.T && t < end {
			end, r.ended = t, "failed"
			break
		}
	}
	r.pending = end - r.first.T
	for _, a := range as[1:] {
		if a.T >= end {
			break
		}
		if a.Addr != r.first.Addr {
			r.second, r.ok = a, true
			break
		}
	}
	return r
}

// requireNoSwitch states the precondition of a check of a client's
// defaults: the scenario sets no environment switch (the trace's header
// carries the scenario the client ran).
func requireNoSwitch(tr *trace.Trace) {
	env := tr.Header.Scenario.Client.Env
	verdict.Require(len(env) == 0, "the scenario sets environment switches (%s): the check is of a client given none", switches(env))
}

func switches(env map[string]string) string {
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ", ")
}

// expectHENotGated: with no environment switch set, the client makes a
// second attempt, to another address, while its first is still pending:
// Happy Eyeballs is on. A first attempt answered or failed within one
// Connection Attempt Delay (and the lab's timer tolerance) leaves no room
// for Happy Eyeballs: inconclusive. One pending longer with no second
// attempt is no Happy Eyeballs: absent.
func expectHENotGated(_ gomega.Gomega, tr *trace.Trace) {
	requireNoSwitch(tr)
	r := heRunOf(tr)
	if r.ok {
		return
	}
	room := defaultDelay + spec.TimerWithin(tr)
	verdict.Require(r.pending >= room,
		"the first connection attempt (to %s at %s) %s after %v, within one Connection Attempt Delay and the lab's timer tolerance (%v): no room for a second attempt",
		r.first.Addr, trace.FormatT(r.first.T), r.ended, r.pending.Round(time.Microsecond), room)
	verdict.NoSign("no environment switch set, and no second attempt while the first (to %s at %s) was pending for %v until %s: Happy Eyeballs did not run",
		r.first.Addr, trace.FormatT(r.first.T), r.pending.Round(time.Millisecond), r.ended)
}

// requireHERan states the precondition of a check of the Connection
// Attempt Delay's value (A61-HE-DELAY-DEFAULT): Happy Eyeballs ran, a
// second address attempted while the first attempt was pending. Without
// it there is no delay to measure, and the missing behaviour is
// A61-HE-NOT-GATED's fail (one fail for it, not a second worded
// differently).
func requireHERan(tr *trace.Trace) {
	r := heRunOf(tr)
	verdict.Require(r.ok, "no second address was attempted while the first attempt (to %s at %s) was pending (%v, until %s): Happy Eyeballs did not run, which A61-HE-NOT-GATED judges; no Connection Attempt Delay to measure",
		r.first.Addr, trace.FormatT(r.first.T), r.pending.Round(time.Millisecond), r.ended)
}
