package ringhash

// RingEntriesForTest is newRing's ring for members with keys and weights:
// each entry's hash and its member's index, for the external test that
// compares the reference's ring with the one conform's checks compute
// (suites/ring).
func RingEntriesForTest(keys []string, weights []uint32, minSize, maxSize uint64) (hashes []uint64, members []int) {
	ms := make([]ringMember, len(keys))
	for i, k := range keys {
		ms[i] = ringMember{key: k, weight: weights[i]}
	}
	for _, e := range newRing(ms, minSize, maxSize) {
		hashes = append(hashes, e.hash)
		members = append(members, e.member)
	}
	return hashes, members
}
