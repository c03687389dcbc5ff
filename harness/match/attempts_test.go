package match

import (
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
)

// failure runs m on actual, requires it to fail without error, and returns
// its failure message.
func failure(t *testing.T, m types.GomegaMatcher, actual any) string {
	t.Helper()
	ok, err := m.Match(actual)
	if err != nil || ok {
		t.Fatalf("want a failed match, got ok=%v err=%v", ok, err)
	}
	return m.FailureMessage(actual)
}

// hasAll reports the lines of want that msg lacks.
func hasAll(t *testing.T, msg string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
}

// TestHaveAttemptOrder_HappyEyeballs_Passes verifies the order of first
// SYNs of a Happy Eyeballs run, with and without captured packets.
func TestHaveAttemptOrder_HappyEyeballs_Passes(t *testing.T) {
	g := NewWithT(t)
	evs := happyEyeballs(t, "250ms", v4, v6)
	g.Expect(evs).To(HaveAttemptOrder(v4, v6))
	g.Expect(&trace.Trace{Events: evs}).To(HaveAttemptOrder(v4, v6))
	policyOnly := trace.Select(evs, trace.FromSource(trace.SourcePolicy))
	g.Expect(policyOnly).To(HaveAttemptOrder(v4, v6))
	g.Expect(evs).NotTo(HaveAttemptOrder(v6, v4))
}

// TestHaveAttemptOrder_OtherOrder_FailsWithTheAttempts verifies that a run
// that tried IPv6 first (and only) fails, and the message names both
// orders and shows the SYNs at the first difference.
func TestHaveAttemptOrder_OtherOrder_FailsWithTheAttempts(t *testing.T) {
	evs := happyEyeballs(t, "250ms", v6, v4) // IPv6 first and dropped, IPv4 wins
	msg := failure(t, HaveAttemptOrder(v4, v6), evs)
	hasAll(t, msg,
		"Expected first connection attempts to\n    198.18.0.10:443, [fd00:c0f::10]:443\n",
		"but they went to (by captured SYNs)\n    [fd00:c0f::10]:443, 198.18.0.10:443\n",
		"First difference at attempt 1: want 198.18.0.10:443, got [fd00:c0f::10]:443.",
		"  > +0.0ms capture syn [fd00:c0f::10]:443 sc=sc1\n",
		"    +250.0ms capture syn 198.18.0.10:443 sc=sc2\n",
	)
	if strings.Contains(msg, "rpc-result") {
		t.Errorf("message shows events about no address involved:\n%s", msg)
	}
}

// TestHaveAttemptOrder_NotATrace_Errors verifies that a wrong actual is an
// error, not a failure.
func TestHaveAttemptOrder_NotATrace_Errors(t *testing.T) {
	if _, err := HaveAttemptOrder(v4).Match("trace"); err == nil || !strings.Contains(err.Error(), "got string") {
		t.Errorf("got err %v", err)
	}
}

// TestHaveGapBetweenAttempts_ConnectionAttemptDelay_Passes verifies the
// 250 ms gap between the first attempts of a Happy Eyeballs run.
func TestHaveGapBetweenAttempts_ConnectionAttemptDelay_Passes(t *testing.T) {
	g := NewWithT(t)
	evs := happyEyeballs(t, "250ms", v4, v6)
	g.Expect(evs).To(HaveGapBetweenAttempts(v4, v6, 250*time.Millisecond, 0))
	g.Expect(evs).NotTo(HaveGapBetweenAttempts(v4, v6, 300*time.Millisecond, 10*time.Millisecond))
}

// TestHaveGapBetweenAttempts_LongerDelay_FailsWithTheGap verifies that a
// 300 ms delay fails a 250 ms ± 10 ms expectation, and the message gives
// the gap and the attempts' events.
func TestHaveGapBetweenAttempts_LongerDelay_FailsWithTheGap(t *testing.T) {
	evs := happyEyeballs(t, "300ms", v4, v6)
	msg := failure(t, HaveGapBetweenAttempts(v4, v6, 250*time.Millisecond, 10*time.Millisecond), evs)
	hasAll(t, msg,
		"Expected the first attempt to [fd00:c0f::10]:443 to follow the first to 198.18.0.10:443 by 250ms ± 10ms",
		"but it followed by 300ms (off by 50ms; by captured SYNs).",
		"    +0.0ms capture syn 198.18.0.10:443 sc=sc1\n",
		"  > +300.0ms capture syn [fd00:c0f::10]:443 sc=sc2\n",
	)
}

// TestHaveGapBetweenAttempts_NoSecondAttempt_FailsSayingSo verifies that a
// run that never tried the second address fails, naming it.
func TestHaveGapBetweenAttempts_NoSecondAttempt_FailsSayingSo(t *testing.T) {
	evs := happyEyeballs(t, "250ms", v4, v6)
	msg := failure(t, HaveGapBetweenAttempts(v4, b1, 250*time.Millisecond, 0), evs)
	hasAll(t, msg, "but no attempt to 198.18.0.11:443 was made (by captured SYNs).")
}
