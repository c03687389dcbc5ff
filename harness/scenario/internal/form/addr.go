package form

import "strings"

// Family is an IP address family.
type Family string

// The address families.
const (
	IPv4 Family = "ipv4"
	IPv6 Family = "ipv6"
)

// Addr is a symbolic address, "backend/family" ("b1/ipv6").
type Addr string

// Split returns the backend name and family of a; ok is false when a is not
// of the form "backend/family" with a known family.
func (a Addr) Split() (backend string, fam Family, ok bool) {
	b, f, found := strings.Cut(string(a), "/")
	if !found || b == "" {
		return "", "", false
	}
	fam = Family(f)
	if fam != IPv4 && fam != IPv6 {
		return "", "", false
	}
	return b, fam, true
}
