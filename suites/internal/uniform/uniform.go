// Package uniform is the goodness-of-fit test behind conform's statistical
// checks: are N samples, each falling into one of k classes, consistent
// with every class being equally likely (a uniform shuffle, whose k
// classes are the k! orders of a list)?
//
// The test is Pearson's chi-square test with its critical value taken from
// the statistic's exact distribution under uniformity, not from the
// chi-square approximation, which is poor this far in the tail and for the
// few dozen samples a lab run affords. The exact distribution is computed by
// enumerating every outcome of N samples over k classes up to the order of
// the classes (the partitions of N into at most k parts, each weighted by
// its multinomial probability and its number of arrangements), so the
// probability that a uniform source fails the test, its false-fail
// probability, is known exactly rather than bounded.
package uniform

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Test is Pearson's chi-square test of k equally likely classes on exactly
// Samples samples, at a stated false-fail probability.
//
// The statistic is kept in integer form, Stat = Σ (k·O_i − N)² over the
// classes' counts O_i, which is k·N times Pearson's X² = Σ (O_i − N/k)² /
// (N/k): integers compare exactly, so the critical region is exact too.
type Test struct {
	Classes int // k, at least 2
	Samples int // N, at least 1
	// Critical is the smallest value of Stat whose upper tail under
	// uniformity is at most the alpha the test was made for: the test
	// rejects uniformity when Stat ≥ Critical.
	Critical int64
	// FalseFail is P(Stat ≥ Critical) when every class is equally likely,
	// computed exactly: the probability that a correct source fails.
	FalseFail float64
}

// New makes the test of classes equally likely classes on samples samples
// whose false-fail probability is as large as it can be without exceeding
// alpha. It fails when too few samples leave no outcome rare enough to
// reject at alpha.
func New(classes, samples int, alpha float64) (Test, error) {
	if classes < 2 || samples < 1 {
		return Test{}, fmt.Errorf("uniform: %d classes and %d samples: want at least 2 classes and 1 sample", classes, samples)
	}
	if !(alpha > 0 && alpha < 1) {
		return Test{}, fmt.Errorf("uniform: alpha %v: want it in (0, 1)", alpha)
	}
	d := Distribution(classes, samples)
	t := Test{Classes: classes, Samples: samples, Critical: math.MaxInt64}
	// Walk the statistic's values from the largest down, keeping the last
	// one whose tail stays within alpha. Adding the smallest terms first
	// keeps the sum accurate.
	tail := 0.0
	for i := len(d) - 1; i >= 0; i-- {
		if tail+d[i].P > alpha {
			break
		}
		tail += d[i].P
		t.Critical, t.FalseFail = d[i].Stat, tail
	}
	if t.FalseFail == 0 {
		return Test{}, fmt.Errorf("uniform: %d samples over %d classes: even the most extreme outcome is more likely than %g, so no test at that level can reject", samples, classes, alpha)
	}
	return t, nil
}

// MustNew is New for tests whose parameters are constants.
func MustNew(classes, samples int, alpha float64) Test {
	t, err := New(classes, samples, alpha)
	if err != nil {
		panic(err)
	}
	return t
}

// Stat is the test's statistic for counts, one per class: Σ (k·O_i − N)².
// It panics when counts do not have one entry per class summing to the
// test's samples.
func (t Test) Stat(counts []int) int64 {
	if len(counts) != t.Classes {
		panic(fmt.Sprintf("uniform: %d counts for %d classes", len(counts), t.Classes))
	}
	sum := 0
	var s int64
	for _, o := range counts {
		sum += o
		d := int64(t.Classes*o - t.Samples)
		s += d * d
	}
	if sum != t.Samples {
		panic(fmt.Sprintf("uniform: counts %v sum to %d, the test is for %d samples", counts, sum, t.Samples))
	}
	return s
}

// ChiSquare is Pearson's X² for counts: Stat / (k·N).
func (t Test) ChiSquare(counts []int) float64 {
	return float64(t.Stat(counts)) / float64(t.Classes*t.Samples)
}

// CriticalChiSquare is the critical value as Pearson's X².
func (t Test) CriticalChiSquare() float64 {
	return float64(t.Critical) / float64(t.Classes*t.Samples)
}

// Rejects reports whether counts reject uniformity: Stat ≥ Critical.
func (t Test) Rejects(counts []int) bool { return t.Stat(counts) >= t.Critical }

// String describes the test in one line, as the catalogue and the
// evidence state it.
func (t Test) String() string {
	return fmt.Sprintf("chi-square over %d equally likely classes, %d samples: reject at X² ≥ %.2f (false-fail probability %.2g, exact)",
		t.Classes, t.Samples, t.CriticalChiSquare(), t.FalseFail)
}

// Point is one value of the statistic and its probability under uniformity.
type Point struct {
	Stat int64
	P    float64
}

// Distribution is the exact distribution of Stat = Σ (k·O_i − N)² when N
// samples fall independently and uniformly into k classes, as points in
// increasing order of Stat. The statistic depends only on the multiset of
// the counts, so the outcomes are enumerated as partitions of N into at
// most k parts, each weighted by its arrangements over the classes.
func Distribution(k, n int) []Point {
	lf := make([]float64, n+1) // lf[i] = ln i!
	for i := 2; i <= n; i++ {
		lf[i] = lf[i-1] + math.Log(float64(i))
	}
	lfk := 0.0 // ln k!
	for i := 2; i <= k; i++ {
		lfk += math.Log(float64(i))
	}
	base := lf[n] - float64(n)*math.Log(float64(k)) + lfk
	mass := map[int64]float64{}
	parts := make([]int, k)
	var walk func(i, rem, most int)
	walk = func(i, rem, most int) {
		if i == k-1 {
			if rem > most {
				return
			}
			parts[i] = rem
			s, lp := int64(0), base
			run := 1
			for j, o := range parts {
				d := int64(k*o - n)
				s += d * d
				lp -= lf[o]
				// Divide by the factorial of each run of equal counts:
				// arrangements = k! / Π multiplicity!.
				if j > 0 && o == parts[j-1] {
					run++
					lp -= math.Log(float64(run))
				} else {
					run = 1
				}
			}
			mass[s] += math.Exp(lp)
			return
		}
		// parts[i] ≥ parts[i+1] ≥ …: the k−i parts left hold rem, so the
		// largest of them is at least ⌈rem/(k−i)⌉.
		for c := min(rem, most); c*(k-i) >= rem; c-- {
			parts[i] = c
			walk(i+1, rem-c, c)
		}
	}
	walk(0, n, n)
	out := make([]Point, 0, len(mass))
	for s, p := range mass {
		out = append(out, Point{s, p})
	}
	slices.SortFunc(out, func(a, b Point) int {
		switch {
		case a.Stat < b.Stat:
			return -1
		case a.Stat > b.Stat:
			return 1
		}
		return 0
	})
	return out
}

// Describe renders counts with their class names for evidence:
// "012: 35, 021: 30, 102: 0, …; X² = 60.00 (reject at ≥ 35.20)".
func (t Test) Describe(names []string, counts []int) string {
	var b strings.Builder
	for i, c := range counts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", names[i], c)
	}
	fmt.Fprintf(&b, "; X² = %.2f (reject at ≥ %.2f)", t.ChiSquare(counts), t.CriticalChiSquare())
	return b.String()
}
