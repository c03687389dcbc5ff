package pickfirst

import (
	"sync"

	"google.golang.org/grpc/balancer"
)

// readyPicker sends every RPC to the chosen subchannel.
type readyPicker struct{ sc balancer.SubConn }

func (p *readyPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{SubConn: p.sc}, nil
}

// queuePicker holds RPCs until the next picker (CONNECTING).
type queuePicker struct{}

func (queuePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}

// errPicker fails RPCs with err (TRANSIENT_FAILURE). err is a plain error,
// not a status: grpc-go then fails RPCs that are not wait-for-ready with
// UNAVAILABLE and this message, and keeps wait-for-ready RPCs queued.
type errPicker struct{ err error }

func (p *errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}

// idlePicker queues RPCs and, on the first pick, asks the policy to leave
// IDLE: A62, Background: after a connection breaks, pick_first reconnects
// only when the application makes an RPC or asks it to connect.
type idlePicker struct{ exitIdle func() }

func newIdlePicker(exitIdle func()) *idlePicker {
	return &idlePicker{exitIdle: sync.OnceFunc(exitIdle)}
}

func (p *idlePicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	p.exitIdle()
	return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
}
