// Package hierarchy carries the hierarchical address paths of gRFC A56
// ("Hierarchical Addresses") in resolver attributes of conform's own, so that
// multi-child reference policies (conform_priority, conform_weighted_target)
// can route each endpoint to the child it belongs to.
//
// A path is a list of child names, outermost first. A multi-child policy
// looks at the first element of each endpoint's (or address's) path to pick
// the child, and strips that element before handing the endpoint down (A56,
// Hierarchical Addresses).
package hierarchy

import (
	"google.golang.org/grpc/resolver"
)

// key is the attribute key. Its type is unexported, so no other package can
// read or overwrite the path by accident.
type key struct{}

// path is the attribute value. It implements Equal so that attributes holding
// equal paths compare equal (attributes.Attributes.Equal).
type path []string

func (p path) Equal(o any) bool {
	q, ok := o.(path)
	if !ok || len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// SetOnEndpoint returns a copy of e whose path is p. The endpoint's other
// attributes are kept.
func SetOnEndpoint(e resolver.Endpoint, p []string) resolver.Endpoint {
	e.Attributes = e.Attributes.WithValue(key{}, path(append([]string(nil), p...)))
	return e
}

// FromEndpoint returns the path of e, or nil when it has none.
func FromEndpoint(e resolver.Endpoint) []string {
	p, _ := e.Attributes.Value(key{}).(path)
	return p
}

// SetOnAddress returns a copy of a whose path is p. The path is carried in
// BalancerAttributes, which do not take part in subchannel identity.
func SetOnAddress(a resolver.Address, p []string) resolver.Address {
	a.BalancerAttributes = a.BalancerAttributes.WithValue(key{}, path(append([]string(nil), p...)))
	return a
}

// FromAddress returns the path of a, or nil when it has none.
func FromAddress(a resolver.Address) []string {
	p, _ := a.BalancerAttributes.Value(key{}).(path)
	return p
}

// Split divides s into one state per child, keyed by the first element of
// each endpoint's and each address's path, with that element stripped (A56,
// Hierarchical Addresses). Endpoints and addresses without a path belong to
// no child and are dropped. Every child state carries s's ServiceConfig and
// Attributes. A child that receives no endpoint is absent from the map; the
// caller decides what such a child is sent.
func Split(s resolver.State) map[string]resolver.State {
	out := make(map[string]resolver.State)
	for _, e := range s.Endpoints {
		p := FromEndpoint(e)
		if len(p) == 0 {
			continue
		}
		cs := childState(out, p[0], s)
		cs.Endpoints = append(cs.Endpoints, SetOnEndpoint(e, p[1:]))
		out[p[0]] = cs
	}
	for _, a := range s.Addresses {
		p := FromAddress(a)
		if len(p) == 0 {
			continue
		}
		cs := childState(out, p[0], s)
		cs.Addresses = append(cs.Addresses, SetOnAddress(a, p[1:]))
		out[p[0]] = cs
	}
	return out
}

func childState(m map[string]resolver.State, name string, parent resolver.State) resolver.State {
	if cs, ok := m[name]; ok {
		return cs
	}
	return resolver.State{ServiceConfig: parent.ServiceConfig, Attributes: parent.Attributes}
}

// ForChild returns the state Split gives child name, or an empty state
// carrying s's ServiceConfig and Attributes when name has no endpoint.
func ForChild(split map[string]resolver.State, name string, parent resolver.State) resolver.State {
	return childState(split, name, parent)
}
