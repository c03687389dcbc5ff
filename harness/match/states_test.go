package match

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
	. "github.com/onsi/gomega"
)

// TestHaveStateSequence_StickyTF_Passes verifies the collapsed
// balancer-state sequence of a run through TRANSIENT_FAILURE to READY.
func TestHaveStateSequence_StickyTF_Passes(t *testing.T) {
	g := NewWithT(t)
	evs := refusedThenCleared(t)
	g.Expect(evs).To(HaveStateSequence("CONNECTING", "TRANSIENT_FAILURE", "READY"))
	g.Expect(evs).To(HaveStateSequence("CONNECTING", "TRANSIENT_FAILURE", "TRANSIENT_FAILURE", "READY"))
	g.Expect(evs).NotTo(HaveStateSequence("CONNECTING", "READY"))
}

// TestHaveStateSequence_ChannelStates_PreferredOverBalancer verifies that
// a driver's channel-state events, when present, are the sequence.
func TestHaveStateSequence_ChannelStates_PreferredOverBalancer(t *testing.T) {
	evs := happyEyeballs(t, "250ms", v4, v6)
	evs = inserted(evs, trace.Event{T: 260 * time.Millisecond, Source: trace.SourceDriver,
		Kind: trace.KindChannelState, State: "READY"})
	NewWithT(t).Expect(evs).To(HaveStateSequence("READY"))
}

// TestHaveStateSequence_NoFailure_FailsAtTheDifference verifies that a run
// that went straight to READY fails an expected TRANSIENT_FAILURE, and the
// message shows both sequences and the state events there.
func TestHaveStateSequence_NoFailure_FailsAtTheDifference(t *testing.T) {
	evs := happyEyeballs(t, "250ms", v4, v6)
	msg := failure(t, HaveStateSequence("CONNECTING", "TRANSIENT_FAILURE", "READY"), evs)
	hasAll(t, msg,
		"Expected the balancer-state sequence\n    CONNECTING, TRANSIENT_FAILURE, READY\nbut got\n    CONNECTING, READY\n",
		"First difference at state 2: want TRANSIENT_FAILURE, got READY.",
		"    +0.0ms policy balancer-state CONNECTING\n",
		"  > +252.0ms policy balancer-state READY\n",
	)
}

// TestStayInTransientFailureUntilReady_PickFirst_Passes verifies that
// pick_first's run through repeated failures keeps TRANSIENT_FAILURE until
// READY.
func TestStayInTransientFailureUntilReady_PickFirst_Passes(t *testing.T) {
	NewWithT(t).Expect(refusedThenCleared(t)).To(StayInTransientFailureUntilReady())
}

// TestStayInTransientFailureUntilReady_LeavesForConnecting_Fails verifies
// that a CONNECTING report after TRANSIENT_FAILURE (a policy without
// sticky TF) fails, and the message shows the state events around it.
func TestStayInTransientFailureUntilReady_LeavesForConnecting_Fails(t *testing.T) {
	evs := inserted(refusedThenCleared(t), trace.Event{T: 1129 * time.Millisecond, Source: trace.SourcePolicy,
		Kind: trace.KindBalancerState, State: "CONNECTING"})
	msg := failure(t, StayInTransientFailureUntilReady(), evs)
	hasAll(t, msg,
		"Expected TRANSIENT_FAILURE (reported at +2.0ms) to last until READY,\n",
		"but the channel reported CONNECTING at +1.129s (balancer-state: CONNECTING, TRANSIENT_FAILURE, CONNECTING, TRANSIENT_FAILURE, READY).",
		"    +2.0ms policy balancer-state TRANSIENT_FAILURE\n",
		"  > +1.129s policy balancer-state CONNECTING\n",
		"    +1.166s policy balancer-state TRANSIENT_FAILURE\n",
	)
}

// TestStayInTransientFailureUntilReady_NeverFails_Fails verifies that a
// run that never reports TRANSIENT_FAILURE fails, saying it does not
// exercise the rule.
func TestStayInTransientFailureUntilReady_NeverFails_Fails(t *testing.T) {
	msg := failure(t, StayInTransientFailureUntilReady(), happyEyeballs(t, "250ms", v4, v6))
	hasAll(t, msg, "the trace never reports TRANSIENT_FAILURE (balancer-state: CONNECTING, READY)")
}
