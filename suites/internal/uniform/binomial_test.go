package uniform

import (
	"math"
	"testing"
)

// TestBinomial_TailsExact verifies the acceptance region against a direct
// sum: each tail outside it is within alpha/2 and one more outcome would
// not be.
func TestBinomial_TailsExact(t *testing.T) {
	const n, p, alpha = 400, 0.25, 1e-6
	b := MustNewBinomial(n, p, alpha)
	pmf := binomialPMF(n, p)
	lower, upper := 0.0, 0.0
	for k := 0; k < b.Lo; k++ {
		lower += pmf[k]
	}
	for k := b.Hi + 1; k <= n; k++ {
		upper += pmf[k]
	}
	if lower > alpha/2 || upper > alpha/2 || lower+pmf[b.Lo] <= alpha/2 || upper+pmf[b.Hi] <= alpha/2 {
		t.Fatalf("%v: tails %g and %g, want each the largest within %g", b, lower, upper, alpha/2)
	}
	if math.Abs(b.FalseFail-(lower+upper)) > 1e-15 {
		t.Fatalf("FalseFail %g, want %g", b.FalseFail, lower+upper)
	}
	if got := b.PassProbability(p); math.Abs(got-(1-b.FalseFail)) > 1e-9 {
		t.Fatalf("PassProbability(p) = %g, want 1 - FalseFail", got)
	}
}

// TestBinomial_SumsToOne guards the log-space PMF.
func TestBinomial_SumsToOne(t *testing.T) {
	sum := 0.0
	for _, v := range binomialPMF(400, 0.25) {
		sum += v
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Fatalf("PMF sums to %v", sum)
	}
}

// TestBinomial_RejectsNothingRare verifies too few samples are refused.
func TestBinomial_RejectsNothingRare(t *testing.T) {
	if _, err := NewBinomial(3, 0.25, 1e-6); err == nil {
		t.Fatal("3 samples at 1e-6: want an error")
	}
}
