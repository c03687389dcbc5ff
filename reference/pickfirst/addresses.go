package pickfirst

import (
	"net"
	"net/netip"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/clock"
)

// addrKey identifies a subchannel: A61 (Move pick_first Logic Out of
// Subchannel) gives every subchannel exactly one address, so the address is
// the identity. Resolver attributes are not part of it.
type addrKey struct {
	addr       string
	serverName string
}

func keyOf(a resolver.Address) addrKey { return addrKey{addr: a.Addr, serverName: a.ServerName} }

// orderAddresses turns the endpoints of a resolver update into the flat list
// the Happy Eyeballs pass walks, in the order of A61 (Address List Handling
// in pick_first):
//
//  1. if shuffle is set (A62 shuffleAddressList), shuffle the endpoints with
//     rnd, never the addresses inside an endpoint;
//  2. flatten, concatenating each endpoint's addresses in order;
//  3. interleave the address families as RFC 8305 section 4 says.
//
// An address listed more than once (in one endpoint or in several) is kept at
// its first position only: one address is one subchannel, and a pass makes
// one attempt per subchannel. Duplicates are dropped before interleaving so
// that they cannot shift the family alternation.
//
// endpoints is not modified.
func orderAddresses(endpoints []resolver.Endpoint, shuffle bool, rnd clock.Rand) []resolver.Address {
	order := make([]int, len(endpoints))
	for i := range order {
		order[i] = i
	}
	if shuffle && len(order) > 1 {
		rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	var flat []resolver.Address
	seen := make(map[addrKey]bool)
	for _, i := range order {
		for _, a := range endpoints[i].Addresses {
			if k := keyOf(a); !seen[k] {
				seen[k] = true
				flat = append(flat, a)
			}
		}
	}
	return interleaveFamilies(flat)
}

// family is an address family for RFC 8305 interleaving. Addresses that are
// not IP literals (a name a custom dialer resolves) form a family of their
// own.
type family int

const (
	familyOther family = iota
	familyIPv4
	familyIPv6
)

func familyOf(addr string) family {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return familyOther
	case ip.Is4() || ip.Is4In6():
		return familyIPv4
	default:
		return familyIPv6
	}
}

// interleaveFamilies reorders addrs as RFC 8305 section 4 describes, with a
// First Address Family Count of one: the family of the first address leads,
// then the families take turns, each keeping its own relative order; once a
// family runs out the others continue. A61 asks for this on the flattened
// list so that one broken family cannot hold back the other.
func interleaveFamilies(addrs []resolver.Address) []resolver.Address {
	var turns []family // families in order of first appearance
	queues := make(map[family][]resolver.Address)
	for _, a := range addrs {
		f := familyOf(a.Addr)
		if _, ok := queues[f]; !ok {
			turns = append(turns, f)
		}
		queues[f] = append(queues[f], a)
	}
	if len(turns) < 2 {
		return addrs
	}
	out := make([]resolver.Address, 0, len(addrs))
	for len(out) < len(addrs) {
		for _, f := range turns {
			if q := queues[f]; len(q) > 0 {
				out = append(out, q[0])
				queues[f] = q[1:]
			}
		}
	}
	return out
}
