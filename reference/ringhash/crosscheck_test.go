package ringhash_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/conformlab/conform/reference/ringhash"
	"github.com/conformlab/conform/suites/ring"
)

// TestRing_AgreesWithTheChecksRing: the reference's ring (exact integer
// arithmetic) and the ring conform's black-box checks compute from A42's
// text (Envoy's floating point, suites/ring) have the same entries for the
// same endpoints, weights and sizes wherever A42 fixes them (the ring is
// not Ambiguous).
func TestRing_AgreesWithTheChecksRing(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	type sizes struct{ min, max uint64 }
	compared := 0
	for c := range 200 {
		n := 1 + rnd.IntN(8)
		keys := make([]string, n)
		weights := make([]uint32, n)
		eps := make([]ring.Endpoint, n)
		for i := range n {
			keys[i] = fmt.Sprintf("[fd00:c0f::b:%x]:50051", c*10+i)
			if i%2 == 1 {
				keys[i] = fmt.Sprintf("198.19.%d.%d:50051", c, i)
			}
			weights[i] = 1
			if c%3 == 0 {
				weights[i] = 1 + uint32(rnd.IntN(5))
			}
			eps[i] = ring.Endpoint{Addrs: []string{keys[i]}, Weight: weights[i]}
		}
		sz := []sizes{{1024, 4096}, {16, 64}, {5, 7}, {1, 4096}}[c%4]
		hashes, members := ringhash.RingEntriesForTest(keys, weights, sz.min, sz.max)
		got := ring.New(eps, sz.min, sz.max)
		if got.Ambiguous() {
			continue
		}
		compared++
		if len(got.Entries) != len(hashes) {
			t.Fatalf("case %d (weights %v, sizes %v): checks' ring has %d entries, the reference's %d", c, weights, sz, len(got.Entries), len(hashes))
		}
		for i, e := range got.Entries {
			if e.Hash != hashes[i] || e.Endpoint != members[i] {
				t.Fatalf("case %d: entry %d is (%x, %d) in the checks' ring, (%x, %d) in the reference's", c, i, e.Hash, e.Endpoint, hashes[i], members[i])
			}
		}
	}
	if compared < 100 {
		t.Errorf("only %d of 200 rings were unambiguous", compared)
	}
}
