package spec

import (
	"net/netip"
	"slices"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// IsV6 reports whether a concrete address ("ip:port") is IPv6.
func IsV6(addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	return err == nil && ap.Addr().Is6()
}

// Interleave is RFC 8305 section 4's interleaving (First Address Family
// Count one) of concrete addresses, starting with the first one's family,
// as A61 (Address List Handling in pick_first, step 3) has pick_first
// apply it to the flattened list.
func Interleave(flat []string) []string {
	if len(flat) == 0 {
		return nil
	}
	var a, b []string
	for _, x := range flat {
		if IsV6(x) == IsV6(flat[0]) {
			a = append(a, x)
		} else {
			b = append(b, x)
		}
	}
	var out []string
	for len(a) > 0 || len(b) > 0 {
		if len(a) > 0 {
			out, a = append(out, a[0]), a[1:]
		}
		if len(b) > 0 {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// ResolverUpdates are tr's resolver updates. A lab trace records each one
// twice, as the harness pushed it and as the recorder saw the policy
// receive it, a few microseconds apart: the second is left out.
func ResolverUpdates(tr *trace.Trace) []trace.Event {
	var out []trace.Event
	for _, e := range Of(tr, trace.KindResolverUpdate) {
		if n := len(out); n > 0 && e.T-out[n-1].T < 5*time.Millisecond && slices.EqualFunc(e.Endpoints, out[n-1].Endpoints, slices.Equal) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// EndpointAddrs are the symbolic addresses of a scenario's endpoints eps,
// endpoint by endpoint, as given (duplicates kept).
func EndpointAddrs(eps []scenario.Endpoint) []scenario.Addr {
	var out []scenario.Addr
	for _, ep := range eps {
		out = append(out, ep.Addrs...)
	}
	return out
}

// Flatten is a resolver update's addresses, endpoint by endpoint, each
// once (A61, Address List Handling in pick_first, step 2; a duplicate
// keeps its first place).
func Flatten(up trace.Event) []string {
	var out []string
	for _, ep := range up.Endpoints {
		for _, a := range ep {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}
