package a56

import "testing"

// TestWeightedTest_RejectsEqualSplit verifies the sample size of the
// weighted spread check: a client that ignores the locality weights (share
// 1/2) passes with probability at most weightedAlpha, and one that honours
// them fails with at most weightedAlpha.
func TestWeightedTest_RejectsEqualSplit(t *testing.T) {
	if weightedTest.FalseFail > weightedAlpha {
		t.Fatalf("%v: false-fail probability above %g", weightedTest, weightedAlpha)
	}
	if p := weightedTest.PassProbability(0.5); p > weightedAlpha {
		t.Fatalf("%v: an equal split passes with probability %g, want at most %g (more samples)", weightedTest, p, weightedAlpha)
	}
}
