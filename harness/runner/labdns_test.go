package runner

import (
	"net/netip"
	"testing"
)

// A61, Allow Resolvers to Return Multiple Addresses Per Endpoint: the
// in-process DNS resolver makes each looked-up address an endpoint of its
// own, in the lookup's order, and lists them flat too.
func TestLabDNSState_EndpointPerAddress(t *testing.T) {
	st := labDNSState([]netip.Addr{netip.MustParseAddr("198.19.0.1"), netip.MustParseAddr("fd00:c0f::b:2")}, "50051")
	want := []string{"198.19.0.1:50051", "[fd00:c0f::b:2]:50051"}
	if len(st.Endpoints) != len(want) || len(st.Addresses) != len(want) {
		t.Fatalf("state = %+v, want %d endpoints of one address", st, len(want))
	}
	for i, w := range want {
		if ep := st.Endpoints[i].Addresses; len(ep) != 1 || ep[0].Addr != w || st.Addresses[i].Addr != w {
			t.Errorf("endpoint %d = %+v (flat %q), want [%s]", i, ep, st.Addresses[i].Addr, w)
		}
	}
}
