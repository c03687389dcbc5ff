package ringhash

import (
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// TestXXH64_ReferenceVectors verifies A42, ring_hash_experimental LB policy,
// LB Policy Config: the hash is XXH64 with seed 0 — the library call the ring
// and the picker make gives the published vectors (short and long inputs,
// each tail length), so a change of library cannot move the ring unseen.
func TestXXH64_ReferenceVectors(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"", 0xEF46DB3751D8E999},
		{"abc", 0x44BC2CF5AD770999},
		{strings.Repeat("a", 32), 0x856E843298F99AD7},
		{"0123456789abcdef0123456789abcdef", 0x642A94958E71E6C5},
		{"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1},
		{"The quick brown fox jumps over the lazy dog", 0x0B242D361FDA71BC},
	} {
		if got := xxhash.Sum64String(c.in); got != c.want {
			t.Errorf("xxhash.Sum64String(%q) = %#016x, want %#016x", c.in, got, c.want)
		}
	}
}
