package match

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
)

// negatedFailure runs m on actual, requires it to succeed, and returns the
// message NotTo would print.
func negatedFailure(t *testing.T, m types.GomegaMatcher, actual any) string {
	t.Helper()
	ok, err := m.Match(actual)
	if err != nil || !ok {
		t.Fatalf("want a successful match, got ok=%v err=%v", ok, err)
	}
	return m.NegatedFailureMessage(actual)
}

// TestMatchers_NegatedMessages_SayWhatHeld verifies that each matcher's
// message under NotTo names what held, with the evidence.
func TestMatchers_NegatedMessages_SayWhatHeld(t *testing.T) {
	he := happyEyeballs(t, "250ms", v4, v6)
	hasAll(t, negatedFailure(t, HaveAttemptOrder(v4, v6), he),
		"not to go to\n    198.18.0.10:443, [fd00:c0f::10]:443\n", "    +250.0ms capture syn [fd00:c0f::10]:443 sc=sc2\n")
	hasAll(t, negatedFailure(t, HaveGapBetweenAttempts(v4, v6, 250*time.Millisecond, 0), he),
		"but it followed by 250ms", "    +0.0ms capture syn 198.18.0.10:443 sc=sc1\n")
	hasAll(t, negatedFailure(t, HaveStateSequence("CONNECTING", "READY"), he),
		"not to be\n    CONNECTING, READY\n")
	hasAll(t, negatedFailure(t, StayInTransientFailureUntilReady(), refusedThenCleared(t)),
		"but it never did (balancer-state: CONNECTING, TRANSIENT_FAILURE, READY)")
	hasAll(t, negatedFailure(t, HavePickDistribution(map[string]float64{"b0": 1}, 0), picks(t, pf, 3)),
		"    b0       1.000   1.000       3\n")
}

// TestMatchers_NilTrace_Errors verifies that a nil *trace.Trace is an
// error for every matcher, not a pass or a failure.
func TestMatchers_NilTrace_Errors(t *testing.T) {
	g := NewWithT(t)
	for _, m := range []types.GomegaMatcher{
		HaveAttemptOrder(v4), HaveGapBetweenAttempts(v4, v6, 0, 0), HaveStateSequence("READY"),
		StayInTransientFailureUntilReady(), HavePickDistribution(nil, 0),
	} {
		_, err := m.Match(nilTrace)
		g.Expect(err).To(MatchError(ContainSubstring("the trace is nil")))
	}
}
