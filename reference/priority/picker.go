package priority

import (
	"google.golang.org/grpc/balancer"
)

// errPicker fails every pick with err: the picker of a TRANSIENT_FAILURE the
// priority policy reports itself.
type errPicker struct{ err error }

func (p errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}

// queuePicker queues every pick: the saved picker of a child that has not
// reported yet.
type queuePicker struct{}

func (queuePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}
