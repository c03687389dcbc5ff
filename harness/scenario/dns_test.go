package scenario

import (
	"reflect"
	"testing"
)

// A61, Allow Resolvers to Return Multiple Addresses Per Endpoint: the DNS
// resolver makes each address an endpoint of its own; IPv4 sorts first
// (RFC 6724's table), repeats are one record.
func TestDNSAnswer_EachAddressItsOwnEndpoint(t *testing.T) {
	u := Resolve(EP("b2/ipv6", "b1/ipv4").With("path", "p0"), EP("b3/ipv4", "b1/ipv4"), EP("b1/ipv6"))
	got := DNSAnswer(u)
	want := Resolve(EP("b1/ipv4"), EP("b3/ipv4"), EP("b2/ipv6"), EP("b1/ipv6"))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DNSAnswer(%v) = %v, want %v", u, got, want)
	}
}
