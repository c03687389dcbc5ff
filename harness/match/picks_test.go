package match

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestHavePickDistribution_RoundRobin_Passes verifies that round_robin's
// picks over two backends are half each, by backend and by address.
func TestHavePickDistribution_RoundRobin_Passes(t *testing.T) {
	g := NewWithT(t)
	evs := picks(t, rr, 100)
	g.Expect(evs).To(HavePickDistribution(map[string]float64{"b0": 0.5, "b1": 0.5}, 0.01))
	g.Expect(evs).To(HavePickDistribution(map[string]float64{v4: 0.5, b1: 0.5}, 0.01))
	g.Expect(evs).NotTo(HavePickDistribution(map[string]float64{"b0": 1}, 0.1))
}

// TestHavePickDistribution_PickFirst_FailsWithTheShares verifies that
// pick_first, which sends every pick to b0, fails an even split, and the
// message tabulates wanted and got shares and lists the first picks.
func TestHavePickDistribution_PickFirst_FailsWithTheShares(t *testing.T) {
	msg := failure(t, HavePickDistribution(map[string]float64{"b0": 0.5, "b1": 0.5}, 0.05), picks(t, pf, 20))
	hasAll(t, msg,
		"Expected the picks distributed within ±0.050 as wanted, over 20 successful picks:\n",
		"    target    want     got   picks\n",
		"    b0       0.500   1.000      20  <- off\n",
		"    b1       0.500   0.000       0  <- off\n",
		"The first picks (of 20):\n    +1.000s policy pick 198.18.0.10:443 sc=sc1 rpc=r0\n",
	)
}

// TestHavePickDistribution_UnwantedTarget_Fails verifies that picks to a
// target the expectation does not name count against it.
func TestHavePickDistribution_UnwantedTarget_Fails(t *testing.T) {
	msg := failure(t, HavePickDistribution(map[string]float64{"b0": 1}, 0.1), picks(t, rr, 10))
	hasAll(t, msg, "    198.18.0.11:443   0.000   0.500       5  <- off\n")
}

// TestHavePickDistribution_NoPicks_Fails verifies that a trace without a
// successful pick fails rather than passing vacuously.
func TestHavePickDistribution_NoPicks_Fails(t *testing.T) {
	msg := failure(t, HavePickDistribution(map[string]float64{"b0": 0}, 1), picks(t, rr, 0))
	hasAll(t, msg, "The trace has no successful pick.")
}
