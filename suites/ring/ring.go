// Package ring is the ring of ring_hash as the documents define it,
// computed from outside the client: gRFC A42 (ring_hash_experimental LB
// policy: Envoy's ring construction, XXH64, ring sizes) with gRFC A61 (Ring
// Hash: each endpoint placed by the hash of its first address). Checks use
// it to say where a request hash lands and which endpoints a pick walks
// through, from the addresses a client was given and its config alone. It
// shares no code with the reference's ring (reference/ringhash), which its
// tests compare it with.
package ring

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Sizes of A42, LB Policy Config: the defaults and the client-side cap
// (default 4096) that configured sizes are clamped to.
const (
	DefaultMinSize = 1024
	DefaultMaxSize = 4096
	SizeCap        = 4096
)

// Endpoint is one endpoint as a client's resolver update gave it: its
// addresses, in order, as "ip:port" (IPv6 in brackets, the form grpc-go,
// grpc-js and C-core print), and its weight (0 counts as 1).
type Endpoint struct {
	Addrs  []string
	Weight uint32
}

// Key is what an endpoint's ring entries are hashed from: its first
// address (A61, Ring Hash).
func (e Endpoint) Key() string { return e.Addrs[0] }

// Entry is one point of the ring: a hash and the endpoint (an index into
// the list the ring was built from).
type Entry struct {
	Hash     uint64
	Endpoint int
}

// Ring is the ring: its entries sorted by hash.
type Ring struct {
	Entries   []Entry
	endpoints int
	// ambiguous: some endpoint's share (scale × normalized weight) is not a
	// whole number, so how many entries it gets depends on the order the
	// endpoints are taken in, which A42 leaves open (Envoy takes them as
	// given, grpc-go and the reference sorted by key).
	ambiguous bool
}

// Ambiguous reports whether the documents leave how many entries an
// endpoint gets to the implementation (see New); a check reading such a
// ring states that it is not, as a precondition.
func (r Ring) Ambiguous() bool { return r.ambiguous }

// New builds the ring of eps (at least one) with the configured sizes (0:
// the default), as A42 describes it after Envoy's algorithm:
//
//   - sizes are clamped to SizeCap;
//   - weights are normalized (weight / sum of weights);
//   - scale = min(ceil(lightest × minSize) / lightest, maxSize);
//   - endpoints, in order of key (A42 does not say; when it matters the
//     ring is Ambiguous), each add entries while the running count is
//     below the running target (target += scale × normalized weight), the
//     n-th entry (from 0) of an endpoint at XXH64, seed 0, of "<key>_<n>";
//   - entries are sorted by hash.
//
// The arithmetic is Envoy's floating point (float64), as grpc-go's and
// C-core's rings are computed.
func New(eps []Endpoint, minSize, maxSize uint64) Ring {
	if minSize == 0 {
		minSize = DefaultMinSize
	}
	if maxSize == 0 {
		maxSize = DefaultMaxSize
	}
	minSize, maxSize = min(minSize, SizeCap), min(maxSize, SizeCap)
	var sum float64
	for _, e := range eps {
		sum += float64(weight(e))
	}
	lightest := math.Inf(1)
	for _, e := range eps {
		lightest = min(lightest, float64(weight(e))/sum)
	}
	scale := min(math.Ceil(lightest*float64(minSize))/lightest, float64(maxSize))
	r := Ring{endpoints: len(eps)}
	order := make([]int, len(eps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(eps[a].Key(), eps[b].Key()) })
	var count, target float64
	for _, i := range order {
		e := eps[i]
		share := scale * float64(weight(e)) / sum
		if math.Abs(share-math.Round(share)) > 1e-6 {
			r.ambiguous = true
		}
		target += share
		for n := 0; count < target; n++ {
			r.Entries = append(r.Entries, Entry{Hash: xxhash.Sum64String(e.Key() + "_" + strconv.Itoa(n)), Endpoint: i})
			count++
		}
	}
	slices.SortStableFunc(r.Entries, func(a, b Entry) int {
		switch {
		case a.Hash < b.Hash:
			return -1
		case a.Hash > b.Hash:
			return 1
		}
		return 0
	})
	return r
}

func weight(e Endpoint) uint32 { return max(e.Weight, 1) }

// RequestHash is the hash of a request whose hash header has the values
// vals: XXH64, seed 0, of the values joined with "," (A76, request hash
// header; A42, Hash Policy: header).
func RequestHash(vals ...string) uint64 {
	s := ""
	for i, v := range vals {
		if i > 0 {
			s += ","
		}
		s += v
	}
	return xxhash.Sum64String(s)
}

// Land is the index of the entry hash h selects: the first whose hash is at
// least h, wrapping to the first entry (A42, Picker Behavior).
func (r Ring) Land(h uint64) int {
	i, _ := slices.BinarySearchFunc(r.Entries, h, func(e Entry, h uint64) int {
		switch {
		case e.Hash < h:
			return -1
		case e.Hash > h:
			return 1
		}
		return 0
	})
	if i == len(r.Entries) {
		return 0
	}
	return i
}

// Lookup is the endpoint hash h lands on.
func (r Ring) Lookup(h uint64) int { return r.Entries[r.Land(h)].Endpoint }

// Walk lists the distinct endpoints in the order a pick for hash h meets
// them, walking the ring clockwise from where h lands (A42, Picker
// Behavior: "the next unique subchannel in the ring"; A61, Ring Hash).
func (r Ring) Walk(h uint64) []int {
	seen := make([]bool, r.endpoints)
	var out []int
	first := r.Land(h)
	for i := range r.Entries {
		e := r.Entries[(first+i)%len(r.Entries)].Endpoint
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// KeyFor is the first of prefix0, prefix1, … (as a request hash header's
// one value) whose walk starts with the endpoints of want, in order, and
// for which ok (when not nil) holds; "" when none of the first 100000
// does.
func (r Ring) KeyFor(prefix string, ok func(key string) bool, want ...int) string {
	for i := range 100000 {
		k := prefix + strconv.Itoa(i)
		w := r.Walk(RequestHash(k))
		if len(w) >= len(want) && slices.Equal(w[:len(want)], want) && (ok == nil || ok(k)) {
			return k
		}
	}
	return ""
}
