package ringhash

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
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
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V6a}, []string{lbtest.V4b, lbtest.V6b}, []string{lbtest.V4c, lbtest.V6c})
	got := keyed(t, w, "a-", ks, 100*ms)
	if want := expectedBackends(m1(lbtest.V4a, lbtest.V4b, lbtest.V4c), ks); !slices.Equal(got, want) {
		t.Errorf("dual-stack endpoints:\n got  %v\n want %v (the ring of the first addresses)", got, want)
	}

	// b0's endpoint now lists its IPv6 address first.
	w.ResolveEndpoints([]string{lbtest.V6a, lbtest.V4a}, []string{lbtest.V4b, lbtest.V6b}, []string{lbtest.V4c, lbtest.V6c})
	moved := keyed(t, w, "b-", ks, 100*ms)
	if want := expectedBackends(m1(lbtest.V6a, lbtest.V4b, lbtest.V4c), ks); !slices.Equal(moved, want) {
		t.Errorf("after reordering b0's addresses:\n got  %v\n want %v (the ring of the new first addresses)", moved, want)
	}
	if slices.Equal(moved, got) {
		t.Errorf("reordering b0's addresses changed no key's endpoint: %v", got)
	}
	evs := w.Events()
	expect(t, "shutdowns", lbtest.Shutdowns(evs))
	for _, c := range lbtest.Created(evs) {
		if c.What != lbtest.V4a && c.What != lbtest.V4b && c.What != lbtest.V4c {
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
	eps := endpointsOf([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4a}, []string{lbtest.V4b, lbtest.V6b}, []string{lbtest.V6b, lbtest.V4b})
	eps[0] = withWeight(eps[0], 1)
	eps[2] = withWeight(eps[2], 9)
	eps[2].Attributes = eps[2].Attributes.WithValue("origin", "second")
	if err := w.Resolve(resolver.State{Endpoints: eps}); err != nil {
		t.Fatal(err)
	}
	got := keyed(t, w, "a-", ks, 100*ms)
	// [lbtest.V4b, lbtest.V6b] and [lbtest.V6b, lbtest.V4b] are one endpoint, placed by lbtest.V4b (the first
	// listed) and distinct from [lbtest.V4b] alone: same ring key, same backend.
	want := expectedBackends([]ringMember{{lbtest.V4a, 1}, {lbtest.V4b, 1}, {lbtest.V4b, 1}}, ks)
	if !slices.Equal(got, want) {
		t.Errorf("with duplicates:\n got  %v\n want %v", got, want)
	}
	if heavy := expectedBackends([]ringMember{{lbtest.V4a, 9}, {lbtest.V4b, 1}, {lbtest.V4b, 1}}, ks); slices.Equal(heavy, want) {
		t.Fatalf("test keys cannot tell the duplicate's weight apart")
	}
	n := 0
	for _, c := range lbtest.Created(w.Events()) {
		if c.What == lbtest.V4a {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d subchannels for %s, want 1 (one child for the duplicated endpoint)", n, lbtest.V4a)
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
	eps := endpointsOf([]string{lbtest.V4a}, []string{lbtest.V4b})
	eps[0] = withWeight(eps[0], 3)
	if err := w.Resolve(resolver.State{Endpoints: eps}); err != nil {
		t.Fatal(err)
	}
	got := keyed(t, w, "a-", ks, 100*ms)
	if want := expectedBackends([]ringMember{{lbtest.V4a, 3}, {lbtest.V4b, 1}}, ks); !slices.Equal(got, want) {
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
		w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
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
			out[i] = lbtest.RPCResult(t, evs, id).Backend
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
	members := m1(lbtest.V4a, lbtest.V4b, lbtest.V4c)
	order := walk(ringFor(members...), members, "grace")
	w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b}, []string{lbtest.V4c})
	if got := keyed(t, w, "a-", []string{"grace"}, 100*ms); got[0] != backendOf[order[0]] {
		t.Fatalf("grace reached %s, want %s", got[0], backendOf[order[0]])
	}
	w.SetHealth(order[0], connectivity.TransientFailure)
	got := keyed(t, w, "b-", []string{"grace"}, 100*ms)
	if got[0] != backendOf[order[1]] {
		t.Errorf("with %s unhealthy, grace reached %s, want %s (the next endpoint on the ring)", order[0], got[0], backendOf[order[1]])
	}
}
