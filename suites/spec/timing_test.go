package spec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

const ms = time.Millisecond

// timerTrace is a lab trace whose stall watch shared the client's process,
// with the given stalls (at, length).
func timerTrace(mode trace.Mode, stalls ...[2]time.Duration) *trace.Trace {
	tr := &trace.Trace{Header: trace.Header{Mode: mode, Env: map[string]string{trace.EnvStallWatch: trace.StallWatchClient}}}
	for _, s := range stalls {
		tr.Events = append(tr.Events, trace.Event{T: s[0], Source: trace.SourceHarness, Kind: trace.KindStall, Duration: s[1]})
	}
	return tr
}

// steady judges RequireSteadyMachine(tr, from, to) as a check does: pass,
// or inconclusive with the reason.
func steady(tr *trace.Trace, from, to time.Duration) verdict.Result {
	c := Check{Requirement: "X", Assert: func(gomega.Gomega, *trace.Trace) {
		RequireSteadyMachine(tr, from, to, "250 ms delay")
	}}
	return verdict.Evaluate(verdict.Subject{}, []Check{c}, tr)[0]
}

// TestRequireSteadyMachine_StallNearTheJudgedIntervalIsInconclusive
// verifies the rule: a stall of StallLimit or more that overlaps the judged
// interval widened by LabTimer makes the check inconclusive, saying where;
// a shorter one, one farther away, or any in a simulated trace does not.
func TestRequireSteadyMachine_StallNearTheJudgedIntervalIsInconclusive(t *testing.T) {
	from, to := 1000*ms, 1250*ms
	for _, c := range []struct {
		name  string
		tr    *trace.Trace
		want  verdict.Verdict
		words string
	}{
		{"no stall", timerTrace(Lab), verdict.Pass, ""},
		{"a stall inside", timerTrace(Lab, [2]time.Duration{1204 * ms, 37 * ms}), verdict.Inconclusive,
			"the machine stalled 37ms at +1.204s, inside the 250 ms delay judged (+1.000s to +1.250s): the lab cannot judge it to ±15ms"},
		{"a stall ending just before", timerTrace(Lab, [2]time.Duration{980 * ms, 12 * ms}), verdict.Inconclusive, "8.0ms before"},
		{"a stall starting just after", timerTrace(Lab, [2]time.Duration{1260 * ms, 20 * ms}), verdict.Inconclusive, "10.0ms after"},
		{"a stall under the limit", timerTrace(Lab, [2]time.Duration{1100 * ms, StallLimit - time.Microsecond}), verdict.Pass, ""},
		{"a stall ending LabTimer before", timerTrace(Lab, [2]time.Duration{900 * ms, 100*ms - LabTimer}), verdict.Pass, ""},
		{"a stall starting LabTimer after", timerTrace(Lab, [2]time.Duration{to + LabTimer, 50 * ms}), verdict.Pass, ""},
		{"the simulator", timerTrace(Sim, [2]time.Duration{1204 * ms, 37 * ms}), verdict.Pass, ""},
	} {
		r := steady(c.tr, from, to)
		if r.Verdict != c.want || !strings.Contains(r.Evidence, c.words) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, r.Verdict, r.Evidence, c.want, c.words)
		}
		if Unsteady(r) != (c.want == verdict.Inconclusive) {
			t.Errorf("%s: Unsteady = %v for %s %q", c.name, Unsteady(r), r.Verdict, r.Evidence)
		}
	}
}

// TestOnlyUnsteady_OtherVerdictsStand verifies when a lab run is made
// again (RunSteady): only when every verdict short of a pass is Unsteady.
func TestOnlyUnsteady_OtherVerdictsStand(t *testing.T) {
	pass := verdict.Result{Verdict: verdict.Pass}
	unsteady := steady(timerTrace(Lab, [2]time.Duration{1100 * ms, 20 * ms}), time.Second, 1250*ms)
	other := verdict.Result{Verdict: verdict.Inconclusive, Evidence: "the client's first attempt left late"}
	fail := verdict.Result{Verdict: verdict.Fail, Kind: verdict.Deviates}
	for _, c := range []struct {
		rs   []verdict.Result
		want bool
	}{
		{[]verdict.Result{pass}, false},
		{[]verdict.Result{pass, unsteady}, true},
		{[]verdict.Result{unsteady, other}, false},
		{[]verdict.Result{unsteady, fail}, false},
	} {
		if got := OnlyUnsteady(c.rs); got != c.want {
			t.Errorf("OnlyUnsteady(%v) = %v, want %v", c.rs, got, c.want)
		}
	}
}

// TestRequireSteadyMachine_LongTimerOnlyItsEnds verifies that for a judged
// interval longer than twice steadySpan (a 10 s timer) only its first and
// last steadySpan count: a stall in its middle does not move the timer.
func TestRequireSteadyMachine_LongTimerOnlyItsEnds(t *testing.T) {
	from, to := time.Second, 11*time.Second
	for _, c := range []struct {
		at   time.Duration
		want verdict.Verdict
	}{
		{from + 100*ms, verdict.Inconclusive},
		{6 * time.Second, verdict.Pass},
		{to - 100*ms, verdict.Inconclusive},
		{to + 5*ms, verdict.Inconclusive},
	} {
		if r := steady(timerTrace(Lab, [2]time.Duration{c.at, 30 * ms}), from, to); r.Verdict != c.want {
			t.Errorf("a 30 ms stall at %v in a judged [%v, %v]: %s %q, want %s", c.at, from, to, r.Verdict, r.Evidence, c.want)
		}
	}
}

// TestRequireSteadyForLeast_OnlyWhatCanMakeItWrong verifies the
// precondition of a check judged only from below (at least 785 ms between
// attempts 1 s apart, or 600 ms apart): a stall at the start is
// inconclusive; one near the end leaves a short interval to fail, and a
// long one to pass when it began after the bound was reached, inconclusive
// when before; one in the middle, or in the simulator, is nothing.
func TestRequireSteadyForLeast_OnlyWhatCanMakeItWrong(t *testing.T) {
	const least = 785 * ms
	from := time.Second
	for _, c := range []struct {
		name  string
		to    time.Duration
		tr    *trace.Trace
		want  verdict.Verdict
		words string
	}{
		{"no stall", from + time.Second, timerTrace(Lab), verdict.Pass, ""},
		{"a stall at the start", from + time.Second, timerTrace(Lab, [2]time.Duration{from + 100*ms, 30 * ms}), verdict.Inconclusive, "inside the backoff judged (+1.000s to +2.000s), near its start"},
		{"a stall just before the start", from + time.Second, timerTrace(Lab, [2]time.Duration{from - 20*ms, 12 * ms}), verdict.Inconclusive, "8.0ms before"},
		{"a stall in the middle", from + time.Second, timerTrace(Lab, [2]time.Duration{from + 400*ms, 100 * ms}), verdict.Pass, ""},
		{"a stall at the end, after the bound", from + time.Second, timerTrace(Lab, [2]time.Duration{from + least + LabTimer, 30 * ms}), verdict.Pass, ""},
		{"a stall at the end, before the bound", from + time.Second, timerTrace(Lab, [2]time.Duration{from + 760*ms, 30 * ms}), verdict.Inconclusive, "before it had lasted 785ms"},
		{"a stall just after the end, before the bound", from + 790*ms, timerTrace(Lab, [2]time.Duration{from + 795*ms, 30 * ms}), verdict.Inconclusive, "after the backoff"},
		{"a short interval, a stall at its end", from + 600*ms, timerTrace(Lab, [2]time.Duration{from + 500*ms, 90 * ms}), verdict.Pass, ""},
		{"the simulator", from + time.Second, timerTrace(Sim, [2]time.Duration{from + 100*ms, 30 * ms}), verdict.Pass, ""},
	} {
		ch := Check{Requirement: "X", Assert: func(gomega.Gomega, *trace.Trace) {
			RequireSteadyForLeast(c.tr, from, c.to, least, "backoff")
		}}
		r := verdict.Evaluate(verdict.Subject{}, []Check{ch}, c.tr)[0]
		if r.Verdict != c.want || !strings.Contains(r.Evidence, c.words) || Unsteady(r) != (c.want == verdict.Inconclusive) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, r.Verdict, r.Evidence, c.want, c.words)
		}
	}
}

// TestRequireSteadyFor_TimeEnoughBesidesTheStalls verifies the precondition
// of a client given 100 ms to react within 10 ms: stalls leaving a clear
// stretch of 10 ms (each widened by LabTimer) do not matter; stalls that
// leave none make it inconclusive; the simulator has none.
func TestRequireSteadyFor_TimeEnoughBesidesTheStalls(t *testing.T) {
	from, to := time.Second, 1100*ms
	for _, c := range []struct {
		name string
		tr   *trace.Trace
		want verdict.Verdict
	}{
		{"no stall", timerTrace(Lab), verdict.Pass},
		{"a 25 ms stall inside", timerTrace(Lab, [2]time.Duration{from + 5*ms, 25 * ms}), verdict.Pass},
		{"two stalls leaving 12 ms between", timerTrace(Lab, [2]time.Duration{from, 30 * ms}, [2]time.Duration{from + 72*ms, 30 * ms}), verdict.Pass},
		{"two stalls leaving 8 ms between", timerTrace(Lab, [2]time.Duration{from, 30 * ms}, [2]time.Duration{from + 68*ms, 30 * ms}), verdict.Inconclusive},
		{"one stall over it all", timerTrace(Lab, [2]time.Duration{from - 5*ms, 100 * ms}), verdict.Inconclusive},
		{"stalls short of the limit", timerTrace(Lab, [2]time.Duration{from, StallLimit - time.Microsecond}, [2]time.Duration{from + 20*ms, StallLimit - time.Microsecond}), verdict.Pass},
		{"the simulator", timerTrace(Sim, [2]time.Duration{from - 5*ms, 100 * ms}), verdict.Pass},
	} {
		ch := Check{Requirement: "X", Assert: func(gomega.Gomega, *trace.Trace) {
			RequireSteadyFor(c.tr, from, to, 10*ms, "reaction")
		}}
		r := verdict.Evaluate(verdict.Subject{}, []Check{ch}, c.tr)[0]
		if r.Verdict != c.want || Unsteady(r) != (c.want == verdict.Inconclusive) {
			t.Errorf("%s: %s %q, want %s", c.name, r.Verdict, r.Evidence, c.want)
		}
	}
}

// TestTimerWithin_ByModeAndWatch verifies the tolerance of a timer check:
// exact in the simulator, LabTimer when the stall watch shared the client's
// process, LabTimerDriver when it did not or the trace does not say.
func TestTimerWithin_ByModeAndWatch(t *testing.T) {
	driver := timerTrace(Lab)
	driver.Header.Env[trace.EnvStallWatch] = trace.StallWatchHarness
	for _, c := range []struct {
		name string
		tr   *trace.Trace
		want time.Duration
	}{
		{"simulated", timerTrace(Sim), 0},
		{"lab, client in conform's process", timerTrace(Lab), LabTimer},
		{"lab, client in a driver process", driver, LabTimerDriver},
		{"lab, no watch", &trace.Trace{Header: trace.Header{Mode: Lab}}, LabTimerDriver},
	} {
		if got := TimerWithin(c.tr); got != c.want {
			t.Errorf("%s: TimerWithin = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReactionWithin_ByModeAndWatch verifies the slack of a reaction at
// once: exact in the simulator, the check's own where the stall watch
// shared the client's process, at least LabTimerDriver where it did not or
// the trace does not say.
func TestReactionWithin_ByModeAndWatch(t *testing.T) {
	driver := timerTrace(Lab)
	driver.Header.Env[trace.EnvStallWatch] = trace.StallWatchHarness
	for _, c := range []struct {
		name string
		tr   *trace.Trace
		lab  time.Duration
		want time.Duration
	}{
		{"simulated", timerTrace(Sim), 10 * ms, 0},
		{"lab, client in conform's process", timerTrace(Lab), 10 * ms, 10 * ms},
		{"lab, client in a driver process", driver, 10 * ms, LabTimerDriver},
		{"lab, a driver, a wider slack of its own", driver, 200 * ms, 200 * ms},
		{"lab, no watch", &trace.Trace{Header: trace.Header{Mode: Lab}}, 10 * ms, LabTimerDriver},
	} {
		if got := ReactionWithin(c.tr, c.lab); got != c.want {
			t.Errorf("%s: ReactionWithin(%v) = %v, want %v", c.name, c.lab, got, c.want)
		}
	}
}

// TestCheckAgreement_AStallLeavesItUnjudged verifies that a divergence in
// time the lab's machine stalled before is ErrUnsteadyAgreement, and the
// same divergence on a steady machine a disagreement.
func TestCheckAgreement_AStallLeavesItUnjudged(t *testing.T) {
	s := tinySpec()
	s.Agreement = &compare.Options{Select: []trace.Pred{trace.OfKind(trace.KindRPCResult)}, Tolerance: 50 * time.Millisecond}
	result := func(at time.Duration) trace.Event {
		return trace.Event{T: at, Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: "r1", Backend: "b1"}
	}
	sim := &trace.Trace{Header: trace.Header{Mode: Sim}, Events: []trace.Event{result(time.Second)}}
	steady := &trace.Trace{Header: trace.Header{Mode: Lab}, Events: []trace.Event{result(time.Second + 99*time.Millisecond)}}
	stalled := &trace.Trace{Header: trace.Header{Mode: Lab}, Events: []trace.Event{
		{T: 900 * time.Millisecond, Source: trace.SourceHarness, Kind: trace.KindStall, Duration: 40 * time.Millisecond},
		result(time.Second + 99*time.Millisecond),
	}}
	if err := CheckAgreement(s, sim, steady); err == nil || errors.Is(err, ErrUnsteadyAgreement) {
		t.Errorf("steady machine: %v, want a disagreement", err)
	}
	if err := CheckAgreement(s, sim, stalled); !errors.Is(err, ErrUnsteadyAgreement) {
		t.Errorf("a 40 ms stall before the divergence: %v, want ErrUnsteadyAgreement", err)
	}
	if err := CheckAgreement(s, sim, &trace.Trace{Header: trace.Header{Mode: Lab}, Events: []trace.Event{result(time.Second + 10*time.Millisecond)}}); err != nil {
		t.Errorf("within tolerance: %v", err)
	}
}
