package weightedtarget

import (
	"github.com/conformlab/conform/harness/clock"
	"google.golang.org/grpc/balancer"
)

// weightedPicker delegates each pick to one child picker, chosen at random
// with probability proportional to the child's weight (A28, Weighted target
// LB policy: "The WRR algorithm will be random based").
type weightedPicker struct {
	rnd     clock.Rand
	total   int
	bounds  []int // cumulative weights: child i owns [bounds[i-1], bounds[i])
	pickers []balancer.Picker
}

func newWeightedPicker(rnd clock.Rand, weights []uint32, pickers []balancer.Picker) *weightedPicker {
	p := &weightedPicker{rnd: rnd, pickers: pickers}
	for _, w := range weights {
		p.total += int(w)
		p.bounds = append(p.bounds, p.total)
	}
	return p
}

func (p *weightedPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	r := p.rnd.Intn(p.total)
	lo, hi := 0, len(p.bounds)-1
	for lo < hi { // the first child whose bound is above r
		mid := (lo + hi) / 2
		if p.bounds[mid] > r {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return p.pickers[lo].Pick(info)
}

// queuePicker queues every pick: no child has reported yet.
type queuePicker struct{}

func (queuePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}

// errPicker fails every pick with err.
type errPicker struct{ err error }

func (p errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}
