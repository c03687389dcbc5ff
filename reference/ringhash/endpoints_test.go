package ringhash

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/sim"
)

// expectedBackends is, for each key, the backend of the endpoint the ring
// of members selects first.
func expectedBackends(members []ringMember, ks []string) []string {
	r := ringFor(members...)
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = backendOf[walk(r, members, k)[0]]
	}
	return out
}

// TestRingHash_EndpointPlacedByFirstAddress verifies A61, Ring Hash: each
// endpoint is placed on the ring by the hash of its first address only
// (dual-stack endpoints map keys exactly as their first addresses alone
// would), so reordering an endpoint's addresses moves it on the ring while
// keeping its child and connection (A61, Address List Updates in Petiole
// Policies).
func TestRingHash_EndpointPlacedByFirstAddress(t *testing.T) {
	ks := keys(30)
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	w.ResolveEndpoints([]string{v4a, v6a}, []string{v4b, v6b}, []string{v4c, v6c})
	got := keyed(t, w, "a-", ks, 100*ms)
	if want := expectedBackends(m1(v4a, v4b, v4c), ks); !slices.Equal(got, want) {
		t.Errorf("dual-stack endpoints:\n got  %v\n want %v (the ring of the first addresses)", got, want)
	}

	// b0's endpoint now lists its IPv6 address first.
	w.ResolveEndpoints([]string{v6a, v4a}, []string{v4b, v6b}, []string{v4c, v6c})
	moved := keyed(t, w, "b-", ks, 100*ms)
	if want := expectedBackends(m1(v6a, v4b, v4c), ks); !slices.Equal(moved, want) {
		t.Errorf("after reordering b0's addresses:\n got  %v\n want %v (the ring of the new first addresses)", moved, want)
	}
	if slices.Equal(moved, got) {
		t.Errorf("reordering b0's addresses changed no key's endpoint: %v", got)
	}
	evs := w.Events()
	expect(t, "shutdowns", shutdowns(evs))
	for _, c := range created(evs) {
		if c.What != v4a && c.What != v4b && c.What != v4c {
			t.Errorf("subchannel created for %s at %v: the connected children should have been kept", c.What, c.T)
		}
	}
}

// TestRingHash_DuplicateEndpointsIgnoringAttributes verifies A61, Ring
// Hash: endpoints with the same addresses are one endpoint even when their
// resolver attributes differ (the first is kept, with its weight), so a
// duplicate neither adds weight nor a second child.
func TestRingHash_DuplicateEndpointsIgnoringAttributes(t *testing.T) {
	ks := keys(40)
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	eps := endpointsOf([]string{v4a}, []string{v4b}, []string{v4a}, []string{v4b, v6b}, []string{v6b, v4b})
	eps[0] = withWeight(eps[0], 1)
	eps[2] = withWeight(eps[2], 9)
	eps[2].Attributes = eps[2].Attributes.WithValue("origin", "second")
	if err := w.Resolve(resolver.State{Endpoints: eps}); err != nil {
		t.Fatal(err)
	}
	got := keyed(t, w, "a-", ks, 100*ms)
	// [v4b, v6b] and [v6b, v4b] are one endpoint, placed by v4b (the first
	// listed) and distinct from [v4b] alone: same ring key, same backend.
	want := expectedBackends([]ringMember{{v4a, 1}, {v4b, 1}, {v4b, 1}}, ks)
	if !slices.Equal(got, want) {
		t.Errorf("with duplicates:\n got  %v\n want %v", got, want)
	}
	if heavy := expectedBackends([]ringMember{{v4a, 9}, {v4b, 1}, {v4b, 1}}, ks); slices.Equal(heavy, want) {
		t.Fatalf("test keys cannot tell the duplicate's weight apart")
	}
	n := 0
	for _, c := range created(w.Events()) {
		if c.What == v4a {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d subchannels for %s, want 1 (one child for the duplicated endpoint)", n, v4a)
	}
}

// TestRingHash_WeightAttributeShapesRing verifies A42, ring_hash_experimental
// LB policy and Ring Construction: an endpoint's weight attribute gives it a
// proportional share of the ring, so of many keys about three quarters
// reach the endpoint of weight 3.
func TestRingHash_WeightAttributeShapesRing(t *testing.T) {
	ks := keys(200)
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	eps := endpointsOf([]string{v4a}, []string{v4b})
	eps[0] = withWeight(eps[0], 3)
	if err := w.Resolve(resolver.State{Endpoints: eps}); err != nil {
		t.Fatal(err)
	}
	got := keyed(t, w, "a-", ks, 100*ms)
	if want := expectedBackends([]ringMember{{v4a, 3}, {v4b, 1}}, ks); !slices.Equal(got, want) {
		t.Errorf("weighted:\n got  %v\n want %v", got, want)
	}
	n := 0
	for _, b := range got {
		if b == "b0" {
			n++
		}
	}
	if n < 130 || n > 170 {
		t.Errorf("%d of 200 keys reached the endpoint of weight 3, want about 150", n)
	}
}

// TestRingHash_RandomHashWithoutHeader verifies A42, Hash Policy: a request
// that yields no hash (no header) gets a random one, drawn from the clock
// seam: requests spread over the endpoints, and the same seed repeats the
// same choices.
func TestRingHash_RandomHashWithoutHeader(t *testing.T) {
	run := func(seed uint64) []string {
		w := newWorld(t, headerConfig, seed)
		threeBackends(w)
		w.ResolveEndpoints([]string{v4a}, []string{v4b}, []string{v4c})
		var ids []string
		for i := range 30 {
			id := fmt.Sprintf("r%d", i)
			ids = append(ids, id)
			w.StartRPC(id, sim.RPCOptions{WaitForReady: true})
			w.Advance(10 * ms)
		}
		evs := w.Events()
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = rpcResult(t, evs, id).Backend
		}
		return out
	}
	a, b := run(7), run(7)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different choices:\n %v\n %v", a, b)
	}
	used := map[string]int{}
	for _, x := range a {
		used[x]++
	}
	if len(used) != 3 {
		t.Errorf("30 RPCs without the header reached %v, want all three backends", used)
	}
}

// TestRingHash_UnhealthyEndpointIsPassedOver verifies A61, Generic Health
// Reporting Mechanism with ring_hash as the petiole: its pick_first children
// report health, so an endpoint whose backend reports NOT_SERVING is in
// TRANSIENT_FAILURE and its keys go to the next endpoint on the ring.
func TestRingHash_UnhealthyEndpointIsPassedOver(t *testing.T) {
	w := newWorld(t, headerConfig, 1)
	threeBackends(w)
	members := m1(v4a, v4b, v4c)
	order := walk(ringFor(members...), members, "grace")
	w.ResolveEndpoints([]string{v4a}, []string{v4b}, []string{v4c})
	if got := keyed(t, w, "a-", []string{"grace"}, 100*ms); got[0] != backendOf[order[0]] {
		t.Fatalf("grace reached %s, want %s", got[0], backendOf[order[0]])
	}
	w.SetHealth(order[0], connectivity.TransientFailure)
	got := keyed(t, w, "b-", []string{"grace"}, 100*ms)
	if got[0] != backendOf[order[1]] {
		t.Errorf("with %s unhealthy, grace reached %s, want %s (the next endpoint on the ring)", order[0], got[0], backendOf[order[1]])
	}
}
