package pickfirst

import (
	"reflect"
	"testing"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/clock"
)

func eps(lists ...[]string) []resolver.Endpoint {
	var out []resolver.Endpoint
	for _, l := range lists {
		var e resolver.Endpoint
		for _, a := range l {
			e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
		}
		out = append(out, e)
	}
	return out
}

func addrStrings(as []resolver.Address) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Addr)
	}
	return out
}

// TestPickFirst_AddressOrder_InterleavesFamiliesAfterFlattening verifies A61,
// Address List Handling in pick_first: flatten, then RFC 8305 interleaving
// led by the first address's family.
func TestPickFirst_AddressOrder_InterleavesFamiliesAfterFlattening(t *testing.T) {
	got := addrStrings(orderAddresses(eps(
		[]string{"[fd00::1]:1", "[fd00::2]:1"},
		[]string{"[fd00::3]:1", "10.0.0.1:1"},
		[]string{"10.0.0.2:1"},
	), false, nil))
	want := []string{"[fd00::1]:1", "10.0.0.1:1", "[fd00::2]:1", "10.0.0.2:1", "[fd00::3]:1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

// TestPickFirst_AddressOrder_DuplicateKeptOnce verifies that an address in
// two endpoints is tried once, at its first place, and does not disturb the
// family alternation (A61, Move pick_first Logic Out of Subchannel: one
// address per subchannel).
func TestPickFirst_AddressOrder_DuplicateKeptOnce(t *testing.T) {
	got := addrStrings(orderAddresses(eps(
		[]string{"10.0.0.1:1", "10.0.0.1:1", "[fd00::1]:1"},
		[]string{"10.0.0.2:1", "10.0.0.1:1"},
	), false, nil))
	want := []string{"10.0.0.1:1", "[fd00::1]:1", "10.0.0.2:1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

// TestPickFirst_Shuffle_EndpointsOnlyAndSeeded verifies A61, Address List
// Handling in pick_first, step 1: A62's shuffle moves endpoints, never the
// addresses inside one, and is reproducible for a seed.
func TestPickFirst_Shuffle_EndpointsOnlyAndSeeded(t *testing.T) {
	in := eps(
		[]string{"10.0.0.1:1", "10.0.0.11:1"},
		[]string{"10.0.0.2:1", "10.0.0.12:1"},
		[]string{"10.0.0.3:1", "10.0.0.13:1"},
		[]string{"10.0.0.4:1", "10.0.0.14:1"},
		[]string{"10.0.0.5:1", "10.0.0.15:1"},
	)
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		a := addrStrings(orderAddresses(in, true, clock.NewRand(seed)))
		b := addrStrings(orderAddresses(in, true, clock.NewRand(seed)))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: %v then %v", seed, a, b)
		}
		for i := 0; i < len(a); i += 2 {
			// Endpoint k is ["10.0.0.k:1", "10.0.0.1k:1"].
			if a[i+1] != "10.0.0.1"+a[i][len("10.0.0."):] {
				t.Fatalf("seed %d: endpoint split or reordered: %v", seed, a)
			}
		}
		orders[a[0]+a[2]+a[4]+a[6]+a[8]] = true
	}
	if len(orders) < 5 {
		t.Fatalf("20 seeds gave only %d orders", len(orders))
	}
	if got := addrStrings(in[0].Addresses); got[0] != "10.0.0.1:1" {
		t.Fatalf("input modified: %v", got)
	}
}
