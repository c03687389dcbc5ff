package a61

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/ring"
	"github.com/conformlab/conform/suites/spec"
)

// The ring_hash specs judged from outside: conform computes the client's
// ring itself (suites/ring) from the addresses the client was given and its
// LB config, and compares where each request's key lands with the backend
// that served it.

// rhHeader is the request hash header of the ring_hash specs (A76's
// requestHashHeader).
const rhHeader = "x-key"

// rhView is a client's ring as the documents define it at one moment: built
// from the last resolver update it was given, with its config's sizes.
type rhView struct {
	ring     ring.Ring
	backends []string // the backend of each endpoint
}

// rhAt is the ring of the client of tr at t.
func rhAt(g gomega.Gomega, tr *trace.Trace, t time.Duration) rhView {
	var cfg struct {
		MinRingSize uint64 `json:"minRingSize"`
		MaxRingSize uint64 `json:"maxRingSize"`
	}
	if c := tr.Header.Scenario.Client.LBConfig; c != "" {
		g.ExpectWithOffset(1, json.Unmarshal([]byte(c), &cfg)).To(gomega.Succeed(), "the client's ring_hash config")
	}
	upd := trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate), func(e trace.Event) bool { return e.T < t && len(e.Endpoints) > 0 })
	g.ExpectWithOffset(1, upd).NotTo(gomega.BeEmpty(), "no resolver update before %v", t)
	sym := tr.Header.Scenario.Symbolic(runner.AddrOf)
	var v rhView
	var eps []ring.Endpoint
	for _, ep := range upd[len(upd)-1].Endpoints {
		eps = append(eps, ring.Endpoint{Addrs: ep})
		b, _, _ := sym[ep[0]].Split()
		v.backends = append(v.backends, b)
	}
	v.ring = ring.New(eps, cfg.MinRingSize, cfg.MaxRingSize)
	verdict.Require(!v.ring.Ambiguous(), "the ring's sizes leave how many entries an endpoint gets to the implementation (A42)")
	return v
}

// walk is the backends a pick with key meets, in order.
func (v rhView) walk(key string) []string {
	var out []string
	for _, e := range v.ring.Walk(ring.RequestHash(key)) {
		out = append(out, v.backends[e])
	}
	return out
}

// rhKey is the request hash header's value of RPC id in tr's scenario.
func rhKey(g gomega.Gomega, tr *trace.Trace, id string) string {
	for _, st := range tr.Header.Scenario.Steps {
		if r, ok := st.Action.(scenario.StartRPC); ok && r.ID == id {
			k, ok := r.Metadata[rhHeader]
			g.ExpectWithOffset(1, ok).To(gomega.BeTrue(), "RPC %s carries no %s", id, rhHeader)
			return k
		}
	}
	g.ExpectWithOffset(1, false).To(gomega.BeTrue(), "no RPC %s in the scenario", id)
	return ""
}

// rhBuildRing is the ring of endpoints given symbolically, at the default
// sizes, with the addresses every runner derives (runner.AddrOf): for
// choosing keys when a scenario is built.
func rhBuildRing(backends []string, eps ...[]scenario.Addr) ring.Ring {
	var out []ring.Endpoint
	for _, ep := range eps {
		var addrs []string
		for _, a := range ep {
			b, fam, _ := a.Split()
			addrs = append(addrs, runner.AddrOf(b, slices.Index(backends, b), fam))
		}
		out = append(out, ring.Endpoint{Addrs: addrs})
	}
	return ring.New(out, 0, 0)
}

// mustKey panics when a key could not be found: a spec that cannot be
// built.
func mustKey(k string) string {
	if k == "" {
		panic("a61: no request key lands where the spec wants it")
	}
	return k
}

// rhRPCOK is RPC id's result, stated as a precondition to have succeeded.
func rhRPCOK(g gomega.Gomega, tr *trace.Trace, id string) trace.Event {
	r := spec.RPCResult(g, tr, id)
	verdict.Require(r.Code == "" || r.Code == "OK", "RPC %s failed (%s %s): with every backend up, where it lands says nothing of the ring", id, r.Code, r.Err)
	return r
}

// rhRing: ring_hash over three dual-stack endpoints, picks driven by the
// x-key request header (A76), keys chosen so that the ring of A42/A61
// puts r1 on b1, r2 on b2, r3 on b3; then b1's addresses are reordered
// (its IPv4 address first), which moves b1 on the ring: r1's key lands on
// b2 now (r4), and r5's key, on b2 or b3 before, lands on b1.
func rhRing() spec.Spec {
	backends := []string{"b1", "b2", "b3"}
	before := [][]scenario.Addr{{"b1/ipv6", "b1/ipv4"}, {"b2/ipv6", "b2/ipv4"}, {"b3/ipv6", "b3/ipv4"}}
	after := [][]scenario.Addr{{"b1/ipv4", "b1/ipv6"}, before[1], before[2]}
	r1, r2 := rhBuildRing(backends, before...), rhBuildRing(backends, after...)
	lands := func(r ring.Ring, k string) int { return r.Lookup(ring.RequestHash(k)) }
	km := mustKey(r1.KeyFor("k", func(k string) bool { return lands(r2, k) == 1 }, 0))
	k2 := mustKey(r1.KeyFor("k", nil, 1))
	k3 := mustKey(r1.KeyFor("k", nil, 2))
	kn := mustKey(r2.KeyFor("k", func(k string) bool { return lands(r1, k) != 0 }, 0))
	eps := func(list [][]scenario.Addr) scenario.ResolverUpdate {
		var out []scenario.Endpoint
		for _, ep := range list {
			out = append(out, scenario.EP(ep...))
		}
		return scenario.Resolve(out...)
	}
	md := func(k string) scenario.RPCOption { return scenario.Metadata(rhHeader, k) }
	return spec.Spec{
		Doc: requirement.A61, Section: sectionRingHash,
		Scenario: scenario.New("rh-ring").
			Describe(fmt.Sprintf("ring_hash (request hash: header x-key); the client gets [b1/ipv6, b1/ipv4], [b2/…], [b3/…]; r1 (x-key %s, on b1's entry), r2 (%s, b2), r3 (%s, b3) at 200, 220, 240 ms; at 600 ms b1's addresses reordered, [b1/ipv4, b1/ipv6]; r4 (%s again, b2's entry now) and r5 (%s, b1's new entry) at 800 and 820 ms", km, k2, k3, km, kn)).
			Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).Backend("b3", scenario.Dual).
			LB("ring_hash_experimental", `{"requestHashHeader":"x-key"}`).
			At(0, eps(before)).
			At(200*time.Millisecond, scenario.RPC("r1", md(km))).
			At(220*time.Millisecond, scenario.RPC("r2", md(k2))).
			At(240*time.Millisecond, scenario.RPC("r3", md(k3))).
			At(600*time.Millisecond, eps(after)).
			At(800*time.Millisecond, scenario.RPC("r4", md(km))).
			At(820*time.Millisecond, scenario.RPC("r5", md(kn))).
			After(scenario.On("rpc-result").WithRPC("r5"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-ENTRY-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, id := range []string{"r1", "r2", "r3"} {
					start := spec.RPCStart(g, tr, id)
					r := rhRPCOK(g, tr, id)
					key := rhKey(g, tr, id)
					w := rhAt(g, tr, start).walk(key)
					g.Expect(r.Backend).To(gomega.Equal(w[0]), "%s (x-key %s) lands on %s's entry (each endpoint placed by the hash of its first address); served by %s", id, key, w[0], r.Backend)
				}
			}},
			{Requirement: "A61-RH-REORDER-MOVES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// Precondition: before the reorder, r1 landed where the
				// ring said (A61-RH-ENTRY-PER-ENDPOINT judges that).
				r1 := rhRPCOK(g, tr, "r1")
				was := rhAt(g, tr, spec.RPCStart(g, tr, "r1"))
				verdict.Require(r1.Backend == was.walk(rhKey(g, tr, "r1"))[0], "r1 was not served where the ring first placed its key (A61-RH-ENTRY-PER-ENDPOINT)")
				for _, id := range []string{"r4", "r5"} {
					start := spec.RPCStart(g, tr, id)
					r := rhRPCOK(g, tr, id)
					key := rhKey(g, tr, id)
					now, then := rhAt(g, tr, start).walk(key)[0], was.walk(key)[0]
					verdict.Require(now != then, "%s's key lands on %s before and after the reorder: it says nothing of the move", id, now)
					g.Expect(r.Backend).To(gomega.Equal(now), "%s (x-key %s): b1's new first address moved it on the ring, so the key lands on %s now (on %s before); served by %s", id, key, now, then, r.Backend)
				}
			}},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}
