package ringhash

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/conformlab/conform/reference/internal/lbtest"
)

func counts(r ring, n int) []int {
	c := make([]int, n)
	for _, e := range r {
		c[e.member]++
	}
	return c
}

// TestRing_SizeSmallestAboveMinGivingLightestWholeEntries verifies A42, Ring
// Construction: the ring has the smallest size not below min_ring_size at
// which the lightest endpoint has a whole number of entries, and every
// endpoint gets entries in proportion to its weight.
func TestRing_SizeSmallestAboveMinGivingLightestWholeEntries(t *testing.T) {
	for _, c := range []struct {
		weights  []uint32
		min, max uint64
		want     []int
	}{
		{[]uint32{1, 1, 1}, 1024, 4096, []int{342, 342, 342}},
		{[]uint32{1, 3}, 1024, 4096, []int{256, 768}},
		{[]uint32{1, 100}, 1024, 4096, []int{11, 1100}},
		{[]uint32{2, 2, 4}, 10, 4096, []int{3, 3, 6}},
		{[]uint32{1}, 1024, 4096, []int{1024}},
	} {
		var ms []ringMember
		for i, w := range c.weights {
			ms = append(ms, ringMember{key: fmt.Sprintf("10.0.0.%d:443", i), weight: w})
		}
		r := newRing(ms, c.min, c.max)
		if got := counts(r, len(ms)); !slices.Equal(got, c.want) {
			t.Errorf("weights %v, min %d: entries per endpoint %v, want %v", c.weights, c.min, got, c.want)
		}
	}
}

// TestRing_ClampedToMaxSize verifies A42, Ring Construction: the size is
// clamped to max_ring_size, the entries still shared by weight.
func TestRing_ClampedToMaxSize(t *testing.T) {
	for _, c := range []struct {
		weights  []uint32
		min, max uint64
		want     []int
	}{
		{[]uint32{1, 100}, 1024, 1000, []int{10, 990}},
		{[]uint32{1, 1, 1}, 4096, 4096, []int{1366, 1365, 1365}},
		{[]uint32{1, 1, 1}, 8, 8, []int{3, 3, 2}},
	} {
		var ms []ringMember
		for i, w := range c.weights {
			ms = append(ms, ringMember{key: fmt.Sprintf("10.0.0.%d:443", i), weight: w})
		}
		r := newRing(ms, c.min, c.max)
		if len(r) != int(c.max) {
			t.Errorf("weights %v, min %d max %d: ring size %d, want %d", c.weights, c.min, c.max, len(r), c.max)
		}
		if got := counts(r, len(ms)); !slices.Equal(got, c.want) {
			t.Errorf("weights %v, min %d max %d: entries per endpoint %v, want %v", c.weights, c.min, c.max, got, c.want)
		}
	}
}

// TestRing_DeterministicXXH64OfKeyAndIndex verifies A42, Ring Construction
// and LB Policy Config: entries are sorted by hash, each endpoint's n-th
// entry sits at XXH64("<first address>_<n>"), and the ring does not depend
// on the order the endpoints came in.
func TestRing_DeterministicXXH64OfKeyAndIndex(t *testing.T) {
	ms := []ringMember{{key: lbtest.V4a, weight: 1}, {key: lbtest.V6b, weight: 2}, {key: lbtest.V4c, weight: 1}}
	r := newRing(ms, 16, 4096)
	if len(r) != 16 {
		t.Fatalf("ring size %d, want 16", len(r))
	}
	if !slices.IsSortedFunc(r, func(a, b ringEntry) int {
		if a.hash < b.hash {
			return -1
		}
		if a.hash > b.hash {
			return 1
		}
		return 0
	}) {
		t.Errorf("ring not sorted by hash")
	}
	want := map[uint64]string{}
	for i, n := range []int{4, 8, 4} {
		for j := range n {
			want[xxhash.Sum64String(fmt.Sprintf("%s_%d", ms[i].key, j))] = ms[i].key
		}
	}
	for _, e := range r {
		if want[e.hash] != ms[e.member].key {
			t.Errorf("entry %#x of %s: not XXH64 of \"%s_n\" for its n", e.hash, ms[e.member].key, ms[e.member].key)
		}
	}
	// The same members in another order give the same ring.
	perm := []ringMember{ms[2], ms[0], ms[1]}
	r2 := newRing(perm, 16, 4096)
	for i := range r {
		if r[i].hash != r2[i].hash || ms[r[i].member].key != perm[r2[i].member].key {
			t.Fatalf("entry %d differs when the endpoints are reordered", i)
		}
	}
}

// TestRing_FindIsFirstEntryAtOrAboveHashWrapping verifies A42, Picker
// Behavior: a request goes to the entry closest to its hash going up the
// ring, wrapping past the largest hash to the first entry.
func TestRing_FindIsFirstEntryAtOrAboveHashWrapping(t *testing.T) {
	r := ring{{hash: 10}, {hash: 20}, {hash: 30}}
	for h, want := range map[uint64]int{0: 0, 10: 0, 11: 1, 20: 1, 29: 2, 30: 2, 31: 0, ^uint64(0): 0} {
		if got := r.find(h); got != want {
			t.Errorf("find(%d) = %d, want %d", h, got, want)
		}
	}
}
