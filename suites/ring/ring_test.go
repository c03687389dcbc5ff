package ring

import (
	"slices"
	"testing"
)

func eps(keys ...string) []Endpoint {
	out := make([]Endpoint, len(keys))
	for i, k := range keys {
		out[i] = Endpoint{Addrs: []string{k}}
	}
	return out
}

// TestNew_Size_EqualWeights: A42, LB Policy Config: three equal endpoints
// and min 1024 give ceil(1024/3)×3 = 1026 entries, 342 each.
func TestNew_Size_EqualWeights(t *testing.T) {
	r := New(eps("a:1", "b:1", "c:1"), 0, 0)
	if len(r.Entries) != 1026 {
		t.Fatalf("ring of %d entries, want 1026", len(r.Entries))
	}
	per := make([]int, 3)
	for _, e := range r.Entries {
		per[e.Endpoint]++
	}
	if !slices.Equal(per, []int{342, 342, 342}) {
		t.Errorf("entries per endpoint %v, want 342 each", per)
	}
}

// TestNew_Size_Weights: A42 after Envoy: weights 1 and 3 at min 16 give
// the lightest ceil(16/4) = 4 entries and the other 12.
func TestNew_Size_Weights(t *testing.T) {
	e := eps("a:1", "b:1")
	e[1].Weight = 3
	r := New(e, 16, 64)
	per := make([]int, 2)
	for _, x := range r.Entries {
		per[x.Endpoint]++
	}
	if !slices.Equal(per, []int{4, 12}) {
		t.Errorf("entries per endpoint %v, want [4 12]", per)
	}
}

// TestNew_Size_Capped: A42, LB Policy Config: sizes above the client-side
// cap (4096) are treated as the cap.
func TestNew_Size_Capped(t *testing.T) {
	if n := len(New(eps("a:1", "b:1", "c:1"), 8000, 8000).Entries); n != 4096 {
		t.Errorf("ring of %d entries, want the cap, 4096", n)
	}
}

// TestNew_FirstAddressOnly: A61, Ring Hash: only an endpoint's first
// address places it; reordering its addresses moves it.
func TestNew_FirstAddressOnly(t *testing.T) {
	a := New([]Endpoint{{Addrs: []string{"x:1", "y:1"}}, {Addrs: []string{"z:1"}}}, 0, 0)
	b := New([]Endpoint{{Addrs: []string{"x:1", "w:1"}}, {Addrs: []string{"z:1"}}}, 0, 0)
	c := New([]Endpoint{{Addrs: []string{"y:1", "x:1"}}, {Addrs: []string{"z:1"}}}, 0, 0)
	if !slices.Equal(a.Entries, b.Entries) {
		t.Error("a second address changed the ring")
	}
	if slices.Equal(a.Entries, c.Entries) {
		t.Error("a new first address left the ring as it was")
	}
}

// TestWalk_DistinctInRingOrder: A42, Picker Behavior: the walk meets each
// endpoint once, starting with the one the hash lands on.
func TestWalk_DistinctInRingOrder(t *testing.T) {
	r := New(eps("a:1", "b:1", "c:1"), 0, 0)
	for _, k := range []string{"k1", "k2", "k3"} {
		h := RequestHash(k)
		w := r.Walk(h)
		if len(w) != 3 || w[0] != r.Lookup(h) {
			t.Errorf("%s: walk %v, want 3 endpoints from %d", k, w, r.Lookup(h))
		}
		s := slices.Clone(w)
		slices.Sort(s)
		if !slices.Equal(s, []int{0, 1, 2}) {
			t.Errorf("%s: walk %v repeats an endpoint", k, w)
		}
	}
}

// TestLand_Wraps: a hash above the last entry lands on the first.
func TestLand_Wraps(t *testing.T) {
	r := New(eps("a:1"), 4, 4)
	if i := r.Land(^uint64(0)); i != 0 && r.Entries[len(r.Entries)-1].Hash != ^uint64(0) {
		t.Errorf("Land(max) = %d, want 0", i)
	}
	if i := r.Land(0); i != 0 {
		t.Errorf("Land(0) = %d, want 0", i)
	}
}

// TestRequestHash_JoinsValues: A76: several values are joined with ",".
func TestRequestHash_JoinsValues(t *testing.T) {
	if RequestHash("a", "b") != RequestHash("a,b") {
		t.Error("values not joined with ,")
	}
}

// TestKeyFor: the key found lands as asked.
func TestKeyFor(t *testing.T) {
	r := New(eps("a:1", "b:1", "c:1"), 0, 0)
	for want := range 3 {
		k := r.KeyFor("k", nil, want, (want+1)%3)
		if k == "" {
			t.Fatalf("no key walks %d then %d", want, (want+1)%3)
		}
		if w := r.Walk(RequestHash(k)); w[0] != want || w[1] != (want+1)%3 {
			t.Errorf("KeyFor(%d, %d) = %s, which walks %v", want, (want+1)%3, k, w)
		}
	}
}

// TestNew_Ambiguous: four equal endpoints at sizes 5..7 get 7/4 entries
// each, which A42 leaves to the order they are taken in; the default sizes
// never do for equal weights.
func TestNew_Ambiguous(t *testing.T) {
	if !New(eps("a:1", "b:1", "c:1", "d:1"), 5, 7).Ambiguous() {
		t.Error("7 entries over 4 endpoints: want Ambiguous")
	}
	for n := 1; n <= 16; n++ {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = string(rune('a'+i)) + ":1"
		}
		if New(eps(keys...), 0, 0).Ambiguous() {
			t.Errorf("%d equal endpoints at the default sizes: Ambiguous", n)
		}
	}
}
