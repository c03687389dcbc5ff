package uniform

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDistribution_SumsToOne verifies that the enumeration covers every
// outcome once: the probabilities add up to one.
func TestDistribution_SumsToOne(t *testing.T) {
	for _, c := range []struct{ k, n int }{{2, 1}, {2, 60}, {3, 7}, {6, 1}, {6, 60}, {24, 30}} {
		sum := 0.0
		for _, p := range Distribution(c.k, c.n) {
			sum += p.P
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("k=%d n=%d: probabilities sum to %.12f", c.k, c.n, sum)
		}
	}
}

// TestDistribution_MatchesBruteForce verifies the partition enumeration
// against every labelled outcome, counted one by one.
func TestDistribution_MatchesBruteForce(t *testing.T) {
	const k, n = 4, 9
	want := map[int64]float64{}
	counts := make([]int, k)
	total := math.Pow(k, n)
	var walk func(i int)
	walk = func(i int) {
		if i == n {
			var s int64
			for _, o := range counts {
				d := int64(k*o - n)
				s += d * d
			}
			want[s] += 1 / total
			return
		}
		for c := range counts {
			counts[c]++
			walk(i + 1)
			counts[c]--
		}
	}
	walk(0)
	got := Distribution(k, n)
	if len(got) != len(want) {
		t.Fatalf("%d values of the statistic, want %d", len(got), len(want))
	}
	for _, p := range got {
		if math.Abs(p.P-want[p.Stat]) > 1e-12 {
			t.Errorf("P(Stat = %d) = %.15f, want %.15f", p.Stat, p.P, want[p.Stat])
		}
	}
}

// TestNew_TwoClassesIsTheExactBinomialTest verifies that for two classes
// the test is the two-sided binomial test: it rejects exactly when one
// class has at most lo samples, and its false-fail probability is the
// binomial tail, computed here directly.
func TestNew_TwoClassesIsTheExactBinomialTest(t *testing.T) {
	const n = 60
	test := MustNew(2, n, 1e-6)
	lo := -1
	for o := 0; o <= n/2; o++ {
		if test.Rejects([]int{o, n - o}) {
			lo = o
		}
	}
	if lo < 0 {
		t.Fatal("no outcome is rejected")
	}
	for o := lo + 1; o <= n-lo-1; o++ {
		if test.Rejects([]int{o, n - o}) {
			t.Errorf("%d of %d rejected, but %d is not", o, n, lo+1)
		}
	}
	tail := 0.0
	for o := 0; o <= lo; o++ {
		tail += 2 * binom(n, o) * math.Pow(0.5, n)
	}
	if math.Abs(tail-test.FalseFail) > 1e-15 {
		t.Errorf("FalseFail = %.6g, the binomial tail is %.6g", test.FalseFail, tail)
	}
	if lo != 11 {
		t.Errorf("rejects at most %d of %d in a class, want 11 (P(Bin(60, 1/2) ≤ 11) = 2.3e-7, ≤ 12: 1.1e-6)", lo, n)
	}
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// TestNew_CriticalIsTheTightest verifies the critical value: its tail is
// at most alpha, and the next smaller value of the statistic would exceed
// alpha.
func TestNew_CriticalIsTheTightest(t *testing.T) {
	for _, c := range []struct {
		k, n  int
		alpha float64
	}{{2, 60, 1e-6}, {6, 60, 1e-6}, {6, 60, 0.01}, {3, 40, 1e-3}} {
		test := MustNew(c.k, c.n, c.alpha)
		if test.FalseFail > c.alpha || test.FalseFail <= 0 {
			t.Errorf("%v: false-fail probability %g, want in (0, %g]", test, test.FalseFail, c.alpha)
		}
		d := Distribution(c.k, c.n)
		tail, next := 0.0, 0.0
		for i := len(d) - 1; i >= 0; i-- {
			if d[i].Stat < test.Critical {
				next = tail + d[i].P
				break
			}
			tail += d[i].P
		}
		if next <= c.alpha {
			t.Errorf("%v: one value lower the tail is %g, still within %g", test, next, c.alpha)
		}
	}
}

// TestNew_RefusesNonsense verifies the parameters are checked.
func TestNew_RefusesNonsense(t *testing.T) {
	for _, c := range []struct {
		k, n  int
		alpha float64
	}{{1, 10, 0.01}, {2, 0, 0.01}, {2, 10, 0}, {2, 10, 1}, {2, 20, 1e-6}} {
		if _, err := New(c.k, c.n, c.alpha); err == nil {
			t.Errorf("New(%d, %d, %g): no error", c.k, c.n, c.alpha)
		}
	}
}

// rejections draws trials runs of t.Samples samples from draw and counts
// the runs the test rejects.
func rejections(t Test, trials int, draw func() int) int {
	n := 0
	counts := make([]int, t.Classes)
	for range trials {
		clear(counts)
		for range t.Samples {
			counts[draw()]++
		}
		if t.Rejects(counts) {
			n++
		}
	}
	return n
}

// TestTest_UniformSourceRejectionRate verifies the test's size by
// simulation: a uniform source, many times over, is rejected at the
// computed false-fail probability, within sampling error (four standard
// deviations of the binomial count). At alpha 0.01 the rate is measurable;
// at the suites' 1e-6 the bound allows at most the rare chance rejection.
// The source is seeded, so the test is repeatable.
func TestTest_UniformSourceRejectionRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		k, n   int
		alpha  float64
		trials int
	}{{6, 60, 0.01, 20000}, {2, 60, 0.01, 20000}, {6, 60, 1e-6, 20000}, {2, 60, 1e-6, 20000}} {
		test := MustNew(c.k, c.n, c.alpha)
		got := rejections(test, c.trials, func() int { return rng.IntN(c.k) })
		mean := test.FalseFail * float64(c.trials)
		sd := math.Sqrt(mean * (1 - test.FalseFail))
		if float64(got) > mean+4*sd+1 || float64(got) < mean-4*sd-1 {
			t.Errorf("%v: %d of %d uniform runs rejected, expected %.1f ± %.1f", test, got, c.trials, mean, 4*sd)
		}
	}
}

// TestTest_BiasedSourcesRejected verifies the test's power against the
// shuffles that go wrong in practice, for two and for three endpoints
// (classes: the 2 and the 6 orders), at the suites' sample size and 1e-6:
// no shuffle at all, a Fisher–Yates shuffle that stops one swap short
// (only 3 of the 6 orders of three, none but the given order of two), and
// Sattolo's algorithm (cyclic orders only). Each is rejected in every one
// of many runs; a shuffle with only a mild bias is not what 60 samples can
// tell, and the test does not claim to.
func TestTest_BiasedSourcesRejected(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{2, 3} {
		k := factorial(n)
		test := MustNew(k, 60, 1e-6)
		for _, s := range []struct {
			name    string
			shuffle func([]int)
		}{
			{"never", func([]int) {}},
			{"one swap short", func(p []int) {
				for i := len(p) - 1; i > 1; i-- {
					j := rng.IntN(i + 1)
					p[i], p[j] = p[j], p[i]
				}
			}},
			{"Sattolo", func(p []int) {
				for i := len(p) - 1; i > 0; i-- {
					j := rng.IntN(i)
					p[i], p[j] = p[j], p[i]
				}
			}},
		} {
			draw := func() int {
				p := make([]int, n)
				for i := range p {
					p[i] = i
				}
				s.shuffle(p)
				return lehmer(p)
			}
			if got := rejections(test, 1000, draw); got != 1000 {
				t.Errorf("%d endpoints, shuffle %s: rejected in %d of 1000 runs, want all", n, s.name, got)
			}
		}
	}
}

func factorial(n int) int {
	f := 1
	for i := 2; i <= n; i++ {
		f *= i
	}
	return f
}

// lehmer numbers the orders of 0..n-1 from 0 to n!-1.
func lehmer(p []int) int {
	idx := 0
	for i := range p {
		smaller := 0
		for j := i + 1; j < len(p); j++ {
			if p[j] < p[i] {
				smaller++
			}
		}
		idx = idx*(len(p)-i) + smaller
	}
	return idx
}
