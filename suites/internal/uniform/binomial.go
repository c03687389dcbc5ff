package uniform

import (
	"fmt"
	"math"
)

// Binomial is the exact two-sided test of one class's share: are Samples
// independent samples, Hits of which fell into the class, consistent with
// the class having probability P (a weighted split: a locality of weight 1
// beside one of weight 3 gets P = 1/4)? It accepts Hits in [Lo, Hi]; both
// tails outside are at most half the alpha the test was made for, each
// computed exactly from the binomial distribution, so FalseFail, the
// probability that a source with share P fails, is known exactly.
type Binomial struct {
	Samples   int
	P         float64
	Lo, Hi    int     // the acceptance region, inclusive
	FalseFail float64 // P(Hits < Lo) + P(Hits > Hi) at share P
}

// NewBinomial makes the test of share p on samples samples at false-fail
// probability at most alpha (alpha/2 per tail).
func NewBinomial(samples int, p, alpha float64) (Binomial, error) {
	if samples < 1 || !(p > 0 && p < 1) || !(alpha > 0 && alpha < 1) {
		return Binomial{}, fmt.Errorf("uniform: binomial test of share %v on %d samples at %v: want samples ≥ 1, share and alpha in (0, 1)", p, samples, alpha)
	}
	pmf := binomialPMF(samples, p)
	t := Binomial{Samples: samples, P: p, Lo: 0, Hi: samples}
	// Lo: the largest k whose lower tail P(X < k) stays within alpha/2.
	tail := 0.0
	for k := 0; k < samples; k++ {
		if tail+pmf[k] > alpha/2 {
			break
		}
		tail += pmf[k]
		t.Lo = k + 1
	}
	t.FalseFail = tail
	tail = 0
	for k := samples; k > 0; k-- {
		if tail+pmf[k] > alpha/2 {
			break
		}
		tail += pmf[k]
		t.Hi = k - 1
	}
	t.FalseFail += tail
	if t.Lo == 0 && t.Hi == samples {
		return Binomial{}, fmt.Errorf("uniform: %d samples of share %v: no outcome is rare enough to reject at %g", samples, p, alpha)
	}
	return t, nil
}

// MustNewBinomial is NewBinomial for tests whose parameters are constants.
func MustNewBinomial(samples int, p, alpha float64) Binomial {
	t, err := NewBinomial(samples, p, alpha)
	if err != nil {
		panic(err)
	}
	return t
}

// Passes reports whether hits of Samples are consistent with share P.
func (t Binomial) Passes(hits int) bool { return hits >= t.Lo && hits <= t.Hi }

// PassProbability is the probability that a source whose share is q passes
// the test: for q = P it is 1 − FalseFail; for a wrong share, the chance
// that the test misses it.
func (t Binomial) PassProbability(q float64) float64 {
	pmf := binomialPMF(t.Samples, q)
	sum := 0.0
	for k := t.Lo; k <= t.Hi; k++ {
		sum += pmf[k]
	}
	return sum
}

func (t Binomial) String() string {
	return fmt.Sprintf("exact binomial test of share %.4g on %d samples: accept %d..%d hits (false-fail probability %.3g)", t.P, t.Samples, t.Lo, t.Hi, t.FalseFail)
}

// binomialPMF is P(X = k) for k = 0..n, X ~ Binomial(n, p), computed in log
// space so that the far tails keep their precision.
func binomialPMF(n int, p float64) []float64 {
	out := make([]float64, n+1)
	lp, lq := math.Log(p), math.Log1p(-p)
	ln, _ := math.Lgamma(float64(n + 1))
	for k := 0; k <= n; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		out[k] = math.Exp(ln - lk - lnk + float64(k)*lp + float64(n-k)*lq)
	}
	return out
}
