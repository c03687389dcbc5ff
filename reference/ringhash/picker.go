package ringhash

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"

	"github.com/conformlab/conform/harness/clock"
)

// memberState is a ring member's child as the picker sees it: the state
// and picker the child last reported, frozen when the picker was made
// (A42, ring_hash_experimental LB policy: a new picker on every change of a
// child's state).
type memberState struct {
	state  connectivity.State
	picker balancer.Picker // nil while the child has reported nothing
	// exitIdle asks the child to connect (creating its pick_first), once
	// per picker.
	exitIdle func()
}

// picker is the ring_hash picker of A61, Ring Hash.
type picker struct {
	ring    ring
	members []memberState // indexed by ringEntry.member
	header  string        // request hash header; "" for random hashes
	rnd     clock.Rand
}

func newPicker(r ring, members []memberState, header string, rnd clock.Rand) *picker {
	for i := range members {
		if f := members[i].exitIdle; f != nil {
			members[i].exitIdle = sync.OnceFunc(f)
		}
	}
	return &picker{ring: r, members: members, header: header, rnd: rnd}
}

// Pick walks the ring from the request's hash as A61, Ring Hash, says
// (pick_first's sticky TRANSIENT_FAILURE, A62, makes A42's extra connection
// triggers for failed children unnecessary):
//
//   - a READY child takes the pick;
//   - an IDLE child is asked to connect (in the control plane) and the pick
//     is queued;
//   - a CONNECTING child queues the pick;
//   - a child in TRANSIENT_FAILURE is passed over for the next entry.
//
// When every entry is in TRANSIENT_FAILURE the pick fails with the failure
// of the child the hash selected first.
func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	first := p.ring.find(p.requestHash(info))
	n := len(p.ring)
	for i := 0; i < n; i++ {
		m := &p.members[p.ring[(first+i)%n].member]
		switch m.state {
		case connectivity.Ready:
			return m.picker.Pick(info)
		case connectivity.Idle:
			m.exitIdle()
			return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
		case connectivity.Connecting:
			return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
		}
	}
	m := &p.members[p.ring[first].member]
	if m.picker == nil {
		return balancer.PickResult{}, fmt.Errorf("%s: every endpoint is in TRANSIENT_FAILURE", Name)
	}
	res, err := m.picker.Pick(info)
	if err != nil && !errors.Is(err, balancer.ErrNoSubConnAvailable) {
		// A61, Use pick_first as the Universal Leaf Policy: keep the
		// child's error, which names the address and the reason.
		err = fmt.Errorf("%s: every endpoint is in TRANSIENT_FAILURE; %w", Name, err)
	}
	return res, err
}

// requestHash is XXH64 (seed 0: xxhash.Sum64String) of the values of the
// request hash header joined with "," (A42, Hash Policy: header; A42, LB
// Policy Config: the hash function). Without the header, or without a value for it, the
// request gets a random hash (A42, Hash Policy: when no hash policy yields
// a hash), drawn from the clock's randomness.
func (p *picker) requestHash(info balancer.PickInfo) uint64 {
	if p.header != "" && info.Ctx != nil {
		if md, ok := metadata.FromOutgoingContext(info.Ctx); ok {
			if vals := md.Get(p.header); len(vals) > 0 {
				return xxhash.Sum64String(strings.Join(vals, ","))
			}
		}
	}
	var h uint64
	for range 4 {
		h = h<<16 | uint64(p.rnd.Intn(1<<16))
	}
	return h
}

// errPicker fails RPCs with err.
type errPicker struct{ err error }

func (p errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}
