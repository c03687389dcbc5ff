package spec

import (
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// TestFailureCountReached_EveryNthAcrossAddresses verifies that the count
// runs across addresses in time order, starts after `after`, and leaves out
// a last round short of n.
func TestFailureCountReached_EveryNthAcrossAddresses(t *testing.T) {
	rst := func(ms int, addr string) trace.Event {
		return trace.Event{T: time.Duration(ms) * time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindRST, Addr: addr}
	}
	const a, b, c = "198.18.0.1:443", "198.18.0.2:443", "198.18.0.3:443"
	tr := &trace.Trace{Events: []trace.Event{
		rst(10, a), rst(20, b), rst(30, a), rst(40, a), rst(50, c), rst(60, b), rst(70, a),
	}}
	ms := func(ts ...int) []time.Duration {
		var out []time.Duration
		for _, t := range ts {
			out = append(out, time.Duration(t)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		after time.Duration
		n     int
		addrs []string
		want  []time.Duration
	}{
		{-1, 2, []string{a, b}, ms(20, 40, 70)},                // a, b | a, a | b, a
		{20 * time.Millisecond, 2, []string{a, b}, ms(40, 70)}, // the failure at `after` is not counted
		{-1, 3, []string{b, a}, ms(30, 70)},                    // a, b, a | a, b, a
		{-1, 2, []string{c}, nil},                              // one failure: no round
	} {
		if got := FailureCountReached(tr, tc.after, tc.n, tc.addrs...); !slices.Equal(got, tc.want) {
			t.Errorf("FailureCountReached(after %v, n %d, %v) = %v, want %v", tc.after, tc.n, tc.addrs, got, tc.want)
		}
	}
}

// TestAttempts_FreshSYNsOnly verifies that a retransmitted SYN and other
// kinds are not connection attempts.
func TestAttempts_FreshSYNsOnly(t *testing.T) {
	const a, b = "198.18.0.1:443", "198.18.0.2:443"
	syn := func(ms int, addr string, retransmit bool) trace.Event {
		return trace.Event{T: time.Duration(ms) * time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: addr, Retransmit: retransmit}
	}
	evs := []trace.Event{
		syn(1, a, false), syn(2, b, false), {T: 3 * time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindRST, Addr: a},
		syn(1001, b, true), syn(1200, a, false),
	}
	if got := Attempts(evs); len(got) != 3 || got[0].T != time.Millisecond || got[2].T != 1200*time.Millisecond {
		t.Errorf("Attempts = %v, want the SYNs at 1ms, 2ms and 1.2s", got)
	}
	if got := AttemptsTo(evs, b); len(got) != 1 || got[0].T != 2*time.Millisecond {
		t.Errorf("AttemptsTo(b) = %v, want the SYN at 2ms", got)
	}
}

// TestExpectStateSequence_MissedConnectingIsInconclusive verifies that a
// driver's report of READY right after IDLE (the channel's initial one, a
// later one, or the channel's start when it reported nothing before) is
// read as a state the driver missed, not as the channel skipping
// CONNECTING: inconclusive, never a fail; the whole sequence passes, and a
// wrong one still fails.
func TestExpectStateSequence_MissedConnectingIsInconclusive(t *testing.T) {
	driver := func(states ...string) *trace.Trace {
		tr := &trace.Trace{Header: trace.Header{Mode: Lab}}
		for i, s := range states {
			tr.Events = append(tr.Events, trace.Event{T: time.Duration(i) * time.Millisecond, Source: trace.SourceDriver, Kind: trace.KindChannelState, State: s})
		}
		return tr
	}
	check := verdict.Check{Requirement: "A61-HEALTH-NONE-IS-RAW", Assert: func(g gomega.Gomega, tr *trace.Trace) {
		ExpectStateSequence(g, tr, []string{"CONNECTING", "READY"})
	}}
	for _, c := range []struct {
		name string
		tr   *trace.Trace
		want verdict.Verdict
	}{
		{"every state", driver("IDLE", "CONNECTING", "READY", "SHUTDOWN"), verdict.Pass},
		{"READY right after the initial IDLE", driver("IDLE", "READY", "SHUTDOWN"), verdict.Inconclusive},
		{"READY first", driver("READY", "SHUTDOWN"), verdict.Inconclusive},
		{"a wrong sequence", driver("IDLE", "CONNECTING", "TRANSIENT_FAILURE", "SHUTDOWN"), verdict.Fail},
	} {
		rs := verdict.Evaluate(verdict.Subject{}, []verdict.Check{check}, c.tr)
		if len(rs) != 1 || rs[0].Verdict != c.want {
			t.Errorf("%s: %+v, want %s", c.name, rs, c.want)
		}
	}
}

// TestExpectStateSequence_PolicyRecordWins verifies a trace with the
// policy's own events (the reference's) is judged on the root policy's
// balancer-state record, not on the channel's watch beside it: a watch
// that missed a short CONNECTING (seen once in a 20-run soak of
// connection-lost-idle) is no fail when the policy recorded it, and a
// policy record that lacks it is one, whatever the watch saw.
func TestExpectStateSequence_PolicyRecordWins(t *testing.T) {
	run := func(policy, channel []string) *trace.Trace {
		tr := &trace.Trace{Header: trace.Header{Mode: Lab}}
		for i, s := range policy {
			tr.Events = append(tr.Events, trace.Event{T: time.Duration(2*i) * time.Millisecond, Source: trace.SourcePolicy, Kind: trace.KindBalancerState, State: s})
		}
		for i, s := range channel {
			tr.Events = append(tr.Events, trace.Event{T: time.Duration(2*i+1) * time.Millisecond, Source: trace.SourceDriver, Kind: trace.KindChannelState, State: s})
		}
		slices.SortStableFunc(tr.Events, func(a, b trace.Event) int { return int(a.T - b.T) })
		return tr
	}
	check := verdict.Check{Requirement: "A62-CONNECTION-LOST-IDLE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
		ExpectStateSequence(g, tr, []string{"CONNECTING", "READY", "IDLE", "CONNECTING", "READY"})
	}}
	full := []string{"CONNECTING", "READY", "IDLE", "CONNECTING", "READY"}
	missed := []string{"CONNECTING", "READY", "IDLE", "READY"}
	for _, c := range []struct {
		name            string
		policy, channel []string
		want            verdict.Verdict
	}{
		{"both complete", full, full, verdict.Pass},
		{"the watch missed CONNECTING", full, missed, verdict.Pass},
		{"the policy skipped CONNECTING", missed, full, verdict.Fail},
	} {
		rs := verdict.Evaluate(verdict.Subject{}, []verdict.Check{check}, run(c.policy, c.channel))
		if len(rs) != 1 || rs[0].Verdict != c.want {
			t.Errorf("%s: %+v, want %s", c.name, rs, c.want)
		}
	}
}
