package scenario

import (
	"fmt"
	"slices"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// With TargetDNS, a resolve step sets the records of the scenario's name in
// the lab DNS: one record (A or AAAA) per distinct address of its
// endpoints. What the client's DNS resolver makes of them is DNSAnswer.

// DNSAnswer is what a DNS resolver returns for the records a resolve step
// sets: each address an endpoint of its own (A61, "Allow Resolvers to Return
// Multiple Addresses Per Endpoint": DNS cannot say which addresses share an
// endpoint), IPv4 before IPv6, each family in the step's order, without
// attributes. IPv4 first is how RFC 6724's default policy table sorts the
// lab's addresses (its IPv6 ones are unique local addresses, fc00::/7,
// precedence 3, below IPv4's 35); a resolver that sorts by another table
// (glibc's RFC 3484 one puts them first) orders them otherwise, which the
// checks of a dns scenario allow for.
func DNSAnswer(u ResolverUpdate) ResolverUpdate {
	var v4, v6 []Addr
	for _, ep := range u.Endpoints {
		for _, a := range ep.Addrs {
			_, fam, _ := a.Split()
			switch {
			case slices.Contains(v4, a) || slices.Contains(v6, a):
			case fam == IPv6:
				v6 = append(v6, a)
			default:
				v4 = append(v4, a)
			}
		}
	}
	var out ResolverUpdate
	for _, a := range append(v4, v6...) {
		out.Endpoints = append(out.Endpoints, Endpoint{Addrs: []Addr{a}})
	}
	return out
}

// dnsSteps checks a dns scenario's resolve steps: exactly one, whose
// records are served from the start (a client resolves when it likes, and
// would see a later change of the records on its own schedule, which no
// runner can line up with the simulator's), with addresses and without
// endpoint attributes, which DNS cannot carry.
func (v *validator) dnsSteps() error {
	if v.s.Client.Target != TargetDNS {
		return nil
	}
	seen := -1
	for i, st := range v.s.Steps {
		u, ok := st.Action.(ResolverUpdate)
		if !ok {
			continue
		}
		p := fmt.Sprintf("steps[%d].%s", i, StepResolve)
		if seen >= 0 {
			return form.FieldErr(p, "client.target dns takes one resolve step (steps[%d] is one): the records a client's DNS resolver reads when it likes", seen)
		}
		seen = i
		if len(u.Endpoints) == 0 {
			return form.FieldErr(p+".endpoints", "client.target dns: the records need at least one address")
		}
		for j, e := range u.Endpoints {
			if len(e.Attrs) > 0 {
				return form.FieldErr(fmt.Sprintf("%s.endpoints[%d].attrs", p, j), "client.target dns: DNS records carry no endpoint attributes")
			}
		}
	}
	if seen < 0 {
		return form.FieldErr("steps", "client.target dns needs a resolve step: the records of the scenario's name")
	}
	return nil
}
