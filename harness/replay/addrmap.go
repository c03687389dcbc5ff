package replay

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// Mapping says which symbolic address of the inferred scenario stands for
// each concrete address of the trace.
type Mapping map[string]scenario.Addr

// String lists the mapping one address a line, in backend order, as the
// scenario's description gives it.
func (m Mapping) String() string {
	syms := make([]string, 0, len(m))
	concrete := make(map[string]string, len(m))
	for c, sym := range m {
		syms = append(syms, string(sym))
		concrete[string(sym)] = c
	}
	slices.SortFunc(syms, func(a, b string) int {
		return cmp.Or(cmp.Compare(backendNumber(a), backendNumber(b)), strings.Compare(a, b))
	})
	ls := make([]string, len(syms))
	for i, sym := range syms {
		ls[i] = sym + " = " + concrete[sym]
	}
	return strings.Join(ls, "\n")
}

// backendNumber is N of a symbolic address "bN/family".
func backendNumber(sym string) int {
	b, _, _ := strings.Cut(sym, "/")
	n, _ := strconv.Atoi(strings.TrimPrefix(b, "b"))
	return n
}

// addrMapper assigns concrete addresses to backends: b1, b2, … in order of
// first appearance, each with at most one address per family.
type addrMapper struct {
	m        Mapping
	backends []scenario.Backend
}

func familyOf(addr string) (scenario.Family, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q is not an ip:port literal", addr)
	}
	if ap.Addr().Unmap().Is4() {
		return scenario.IPv4, nil
	}
	return scenario.IPv6, nil
}

// endpoint maps the addresses of one endpoint: addresses of one endpoint
// belong to one backend, one per family, so [v6, v4] is one dual-stack
// backend; a second address of a family starts another backend.
func (am *addrMapper) endpoint(addrs []string) error {
	cur := -1
	for _, a := range addrs {
		if _, ok := am.m[a]; ok {
			continue
		}
		fam, err := familyOf(a)
		if err != nil {
			return err
		}
		if cur < 0 || am.backends[cur].Stack.Has(fam) {
			cur = am.newBackend()
		}
		am.add(cur, a, fam)
	}
	return nil
}

func (am *addrMapper) newBackend() int {
	am.backends = append(am.backends, scenario.Backend{Name: fmt.Sprintf("b%d", len(am.backends)+1)})
	return len(am.backends) - 1
}

// add gives backend i the address a of family fam.
func (am *addrMapper) add(i int, a string, fam scenario.Family) {
	b := &am.backends[i]
	switch {
	case b.Stack == "" && fam == scenario.IPv4:
		b.Stack = scenario.IPv4Only
	case b.Stack == "":
		b.Stack = scenario.IPv6Only
	default:
		b.Stack = scenario.Dual
	}
	am.m[a] = scenario.Addr(b.Name + "/" + string(fam))
}

// mapAddresses maps every address of evs: first those of resolver updates,
// endpoint by endpoint, then any other (a subchannel's, a pick's), each on a
// backend of its own.
func mapAddresses(evs []trace.Event) (Mapping, []scenario.Backend, error) {
	am := &addrMapper{m: Mapping{}}
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindResolverUpdate)) {
		for _, ep := range e.Endpoints {
			if err := am.endpoint(ep); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, e := range evs {
		for _, a := range append(slices.Clip(e.Addrs), e.Addr) {
			if a == "" || e.Source != trace.SourcePolicy {
				continue
			}
			if err := am.endpoint([]string{a}); err != nil {
				return nil, nil, err
			}
		}
	}
	return am.m, am.backends, nil
}
