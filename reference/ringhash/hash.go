package ringhash

import (
	"encoding/binary"
	"math/bits"
)

// XXH64 lives here, written from the xxHash specification, because A42
// (ring_hash_experimental LB policy, LB Policy Config) fixes the hash
// function to XXH64 with seed 0 and the module cannot take a new dependency
// (github.com/cespare/xxhash is not in go.mod). Its own file: it is the one
// piece of this package that is not about load balancing.

const (
	xxPrime1 uint64 = 0x9E3779B185EBCA87
	xxPrime2 uint64 = 0xC2B2AE3D27D4EB4F
	xxPrime3 uint64 = 0x165667B19E3779F9
	xxPrime4 uint64 = 0x85EBCA77C2B2AE63
	xxPrime5 uint64 = 0x27D4EB2F165667C5
)

// xxh64 is XXH64(s) with seed 0.
func xxh64(s string) uint64 {
	b := []byte(s)
	n := len(b)
	var acc uint64
	if n >= 32 {
		// seed + PRIME64_1 + PRIME64_2, seed + PRIME64_2, seed,
		// seed - PRIME64_1, wrapping, with seed 0.
		p1, p2 := xxPrime1, xxPrime2
		v1 := p1 + p2
		v2 := p2
		v3 := uint64(0)
		v4 := -p1
		for len(b) >= 32 {
			v1 = xxRound(v1, binary.LittleEndian.Uint64(b[0:]))
			v2 = xxRound(v2, binary.LittleEndian.Uint64(b[8:]))
			v3 = xxRound(v3, binary.LittleEndian.Uint64(b[16:]))
			v4 = xxRound(v4, binary.LittleEndian.Uint64(b[24:]))
			b = b[32:]
		}
		acc = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		acc = xxMerge(acc, v1)
		acc = xxMerge(acc, v2)
		acc = xxMerge(acc, v3)
		acc = xxMerge(acc, v4)
	} else {
		acc = xxPrime5
	}
	acc += uint64(n)
	for len(b) >= 8 {
		acc ^= xxRound(0, binary.LittleEndian.Uint64(b))
		acc = bits.RotateLeft64(acc, 27)*xxPrime1 + xxPrime4
		b = b[8:]
	}
	if len(b) >= 4 {
		acc ^= uint64(binary.LittleEndian.Uint32(b)) * xxPrime1
		acc = bits.RotateLeft64(acc, 23)*xxPrime2 + xxPrime3
		b = b[4:]
	}
	for _, c := range b {
		acc ^= uint64(c) * xxPrime5
		acc = bits.RotateLeft64(acc, 11) * xxPrime1
	}
	acc ^= acc >> 33
	acc *= xxPrime2
	acc ^= acc >> 29
	acc *= xxPrime3
	acc ^= acc >> 32
	return acc
}

func xxRound(acc, lane uint64) uint64 {
	return bits.RotateLeft64(acc+lane*xxPrime2, 31) * xxPrime1
}

func xxMerge(acc, v uint64) uint64 {
	return (acc^xxRound(0, v))*xxPrime1 + xxPrime4
}
