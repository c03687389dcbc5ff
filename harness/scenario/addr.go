package scenario

import "fmt"

// BackendIndex is the 0-based position of the backend named name in
// declaration order, or -1. Runners derive a backend's concrete addresses
// from it (DESIGN.md, "Addresses"), so traces are stable across runs.
func (s *Scenario) BackendIndex(name string) int {
	for i, b := range s.Backends {
		if b.Name == name {
			return i
		}
	}
	return -1
}

// AddrFunc gives the concrete "ip:port" (IPv6 in brackets) of a backend
// from its name, its index (BackendIndex) and a family. Each runner has
// one; the scenario never computes IPs itself.
type AddrFunc func(backend string, index int, fam Family) string

// Concrete turns the symbolic address a into a concrete one with addrOf.
func (s *Scenario) Concrete(a Addr, addrOf AddrFunc) (string, error) {
	b, fam, ok := a.Split()
	if !ok {
		return "", fmt.Errorf("%q is not an address of the form backend/family", a)
	}
	i := s.BackendIndex(b)
	if i < 0 {
		return "", fmt.Errorf("%q: backend %q is not defined", a, b)
	}
	if !s.Backends[i].Stack.Has(fam) {
		return "", fmt.Errorf("%q: backend %q has no %s address", a, b, fam)
	}
	return addrOf(b, i, fam), nil
}

// ConcreteEndpoints turns a resolver update's endpoints into concrete
// addresses per endpoint, in order: the form of trace.Event's Endpoints.
func (s *Scenario) ConcreteEndpoints(eps []Endpoint, addrOf AddrFunc) ([][]string, error) {
	out := make([][]string, len(eps))
	for i, ep := range eps {
		out[i] = make([]string, len(ep.Addrs))
		for j, a := range ep.Addrs {
			c, err := s.Concrete(a, addrOf)
			if err != nil {
				return nil, fmt.Errorf("endpoint %d: %w", i, err)
			}
			out[i][j] = c
		}
	}
	return out, nil
}

// Symbolic maps every concrete address of s back to its symbolic form, for
// reading a trace in the scenario's terms.
func (s *Scenario) Symbolic(addrOf AddrFunc) map[string]Addr {
	m := map[string]Addr{}
	for i, b := range s.Backends {
		for _, fam := range b.Stack.Families() {
			m[addrOf(b.Name, i, fam)] = Addr(b.Name + "/" + string(fam))
		}
	}
	return m
}
