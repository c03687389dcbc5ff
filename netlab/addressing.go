package netlab

import (
	"net/netip"
)

// The address plan. Every lab uses the same addresses (labs are isolated by
// namespace), so traces are stable across runs:
//
//	client c  (0-based): 198.18.0.(c+1)/15      fd00:c0f::c:(c+1)/64
//	backend i (0-based): 198.19.0.0 + (i+1)/15  fd00:c0f::b:(i+1)/64
//
// 198.18.0.0/15 is reserved for network testing (RFC 2544); fd00:c0f::/48 is
// a unique local prefix (RFC 4193).
var (
	PrefixV4 = netip.MustParsePrefix("198.18.0.0/15")
	PrefixV6 = netip.MustParsePrefix("fd00:c0f::/64")
)

// Family is an address family: IPv4 or IPv6.
type Family int

// The address families.
const (
	IPv4 Family = iota
	IPv6
)

func (f Family) String() string {
	if f == IPv6 {
		return "IPv6"
	}
	return "IPv4"
}

// FamilyOf is a's family.
func FamilyOf(a netip.Addr) Family {
	if a.Is6() && !a.Is4In6() {
		return IPv6
	}
	return IPv4
}

// ClientAddr returns client c's address of family fam.
func ClientAddr(c int, fam Family) netip.Addr {
	if fam == IPv6 {
		return v6Host(0xc, c+1)
	}
	return netip.AddrFrom4([4]byte{198, 18, 0, byte(c + 1)})
}

// BackendAddr returns backend i's address of family fam.
func BackendAddr(i int, fam Family) netip.Addr {
	if fam == IPv6 {
		return v6Host(0xb, i+1)
	}
	n := i + 1
	return netip.AddrFrom4([4]byte{198, 19, byte(n >> 8), byte(n)})
}

func v6Host(role, n int) netip.Addr {
	a := PrefixV6.Addr().As16()
	a[12], a[13] = byte(role>>8), byte(role)
	a[14], a[15] = byte(n>>8), byte(n)
	return netip.AddrFrom16(a)
}

// InLab reports whether a is an address this package may ever use.
func InLab(a netip.Addr) bool {
	return PrefixV4.Contains(a) || netip.MustParsePrefix("fd00:c0f::/48").Contains(a)
}
