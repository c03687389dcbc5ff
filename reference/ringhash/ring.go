package ringhash

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/grpc/resolver"
)

// weightKey is the endpoint attribute carrying an endpoint's weight.
type weightKey struct{}

// withWeight returns e with weight w.
func withWeight(e resolver.Endpoint, w uint32) resolver.Endpoint {
	e.Attributes = e.Attributes.WithValue(weightKey{}, w)
	return e
}

// SetWeight returns e with ring_hash weight w (A42: the per-address weight
// attribute; through xDS, locality weight × endpoint weight). A weight of 0
// counts as 1.
func SetWeight(e resolver.Endpoint, w uint32) resolver.Endpoint { return withWeight(e, w) }

// Weight is e's ring_hash weight: the one SetWeight gave it, or 1.
func Weight(e resolver.Endpoint) uint32 { return weightOf(e) }

// weightOf is e's weight: its attribute, or 1 when it has none (or 0).
func weightOf(e resolver.Endpoint) uint32 {
	if w, ok := e.Attributes.Value(weightKey{}).(uint32); ok && w > 0 {
		return w
	}
	return 1
}

// ringMember is one endpoint as the ring sees it.
type ringMember struct {
	// key is what the endpoint's entries are hashed from: its first address
	// (A61, Ring Hash).
	key    string
	weight uint32
}

// ringEntry is one point on the ring.
type ringEntry struct {
	hash uint64
	// member indexes the slice newRing was given.
	member int
}

// ring is A42's ring: entries sorted by hash.
type ring []ringEntry

// newRing builds the ring for members (at least one) as A42, Ring
// Construction, describes, following the Envoy algorithm it refers to:
//
//   - the ring size is the smallest number not below minSize at which the
//     member with the smallest weight gets a whole number of entries, clamped
//     to maxSize;
//   - members, taken in order of key, get entries in proportion to their
//     weight, each placed at XXH64 (seed 0: xxhash.Sum64String) of
//     "key_n", n counting that member's entries from 0 (Envoy's input
//     format, so that rings agree with other implementations);
//   - entries are sorted by hash (ties by member order, for determinism).
//
// The arithmetic is exact (integers), so the ring depends only on the
// members' keys and weights and on the sizes, never on their order or on
// floating-point rounding.
func newRing(members []ringMember, minSize, maxSize uint64) ring {
	order := make([]int, len(members))
	var total, minW uint64
	for i, m := range members {
		order[i] = i
		total += uint64(m.weight)
		if i == 0 || uint64(m.weight) < minW {
			minW = uint64(m.weight)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(members[a].key, members[b].key) })

	// With normalized weights w/total, the scale (ring size) is
	// ceil(minW/total × minSize) × total/minW, clamped to maxSize. The
	// running target after a member is scale × (cumulative weight)/total;
	// a member gets entries until the count reaches the target.
	k := mulDivCeil(minW, minSize, total) // entries of the lightest member
	scaleNum, scaleDen := k*total, minW   // scale = scaleNum/scaleDen
	if hi, lo := bits.Mul64(k, total); hi > 0 || lo > maxSize*minW {
		scaleNum, scaleDen = maxSize, 1
	}
	r := make(ring, 0, maxSize)
	var cum, count uint64
	for _, i := range order {
		cum += uint64(members[i].weight)
		// target = ceil(scaleNum × cum / (scaleDen × total))
		target := mulDivCeil2(scaleNum, cum, scaleDen, total)
		for n := 0; count < target; n++ {
			r = append(r, ringEntry{hash: xxhash.Sum64String(members[i].key + "_" + strconv.Itoa(n)), member: i})
			count++
		}
	}
	slices.SortStableFunc(r, func(a, b ringEntry) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	return r
}

// find returns the index of the entry a request hash h selects: the first
// whose hash is at least h, wrapping to the start of the ring (A42, Picker
// Behavior: the entry closest to the request's hash, clockwise).
func (r ring) find(h uint64) int {
	i, _ := slices.BinarySearchFunc(r, h, func(e ringEntry, h uint64) int {
		switch {
		case e.hash < h:
			return -1
		case e.hash > h:
			return 1
		}
		return 0
	})
	if i == len(r) {
		return 0
	}
	return i
}

// mulDivCeil is ceil(a×b/c) for c > 0 and a result that fits 64 bits.
func mulDivCeil(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, rem := bits.Div64(hi, lo, c)
	if rem != 0 {
		q++
	}
	return q
}

// mulDivCeil2 is ceil(a×b/(c×d)); used with c×d small enough for 64 bits
// (c is a weight or 1, d a sum of weights) and a result bounded by the ring
// size.
func mulDivCeil2(a, b, c, d uint64) uint64 {
	hi, lo := bits.Mul64(c, d)
	if hi != 0 {
		// c×d overflows only with absurd weights; fall back to two steps,
		// which may round one entry differently but stays within bounds.
		return mulDivCeil(mulDivCeil(a, b, c), 1, d)
	}
	return mulDivCeil(a, b, lo)
}
