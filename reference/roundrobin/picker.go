package roundrobin

import (
	"errors"
	"sync/atomic"

	"google.golang.org/grpc/balancer"

	"github.com/conformlab/conform/harness/clock"
)

// rotatingPicker hands each pick to the next child picker in turn, starting
// at a random child so that channels built together do not all hit the same
// endpoint first. wrapErr, if set, rewrites the children's errors (not the
// "queue" signal).
type rotatingPicker struct {
	pickers []balancer.Picker
	next    atomic.Uint32
	wrapErr func(error) error
}

func newRotatingPicker(pickers []balancer.Picker, rnd clock.Rand, wrapErr func(error) error) *rotatingPicker {
	p := &rotatingPicker{pickers: pickers, wrapErr: wrapErr}
	p.next.Store(uint32(rnd.Intn(len(pickers))))
	return p
}

func (p *rotatingPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	i := p.next.Add(1) - 1
	res, err := p.pickers[int(i%uint32(len(p.pickers)))].Pick(info)
	if err != nil && p.wrapErr != nil && !errors.Is(err, balancer.ErrNoSubConnAvailable) {
		err = p.wrapErr(err)
	}
	return res, err
}

// queuePicker holds RPCs until the next picker.
type queuePicker struct{}

func (queuePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}

// errPicker fails RPCs with err.
type errPicker struct{ err error }

func (p errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}
