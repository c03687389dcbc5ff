package a61

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
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

// rhAt is the ring of the client of tr at t: from its resolver updates,
// or, for an xDS client, from what the management server served it.
func rhAt(g gomega.Gomega, tr *trace.Trace, t time.Duration) rhView {
	if tr.Header.Scenario.Client.Target == scenario.TargetXDS {
		return rhXDSAt(g, tr, t)
	}
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

// reorderKeys are the address lists and request keys of the reorder specs:
// three dual-stack endpoints, IPv6 first (before), then b1's IPv4 address
// first (after); km lands on b1 before and on b2 after, k2 and k3 on b2 and
// b3 before, kn on b1 after and elsewhere before.
func reorderKeys() (before, after [][]scenario.Addr, km, k2, k3, kn string) {
	backends := []string{"b1", "b2", "b3"}
	before = [][]scenario.Addr{{"b1/ipv6", "b1/ipv4"}, {"b2/ipv6", "b2/ipv4"}, {"b3/ipv6", "b3/ipv4"}}
	after = [][]scenario.Addr{{"b1/ipv4", "b1/ipv6"}, before[1], before[2]}
	r1, r2 := rhBuildRing(backends, before...), rhBuildRing(backends, after...)
	lands := func(r ring.Ring, k string) int { return r.Lookup(ring.RequestHash(k)) }
	km = mustKey(r1.KeyFor("k", func(k string) bool { return lands(r2, k) == 1 }, 0))
	k2 = mustKey(r1.KeyFor("k", nil, 1))
	k3 = mustKey(r1.KeyFor("k", nil, 2))
	kn = mustKey(r2.KeyFor("k", func(k string) bool { return lands(r1, k) != 0 }, 0))
	return before, after, km, k2, k3, kn
}

// rhRing: ring_hash over three dual-stack endpoints, picks driven by the
// x-key request header (A76), keys chosen so that the ring of A42/A61
// puts r1 on b1, r2 on b2, r3 on b3; then b1's addresses are reordered
// (its IPv4 address first), which moves b1 on the ring: r1's key lands on
// b2 now (r4), and r5's key, on b2 or b3 before, lands on b1.
func rhRing() spec.Spec {
	before, after, km, k2, k3, kn := reorderKeys()
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
			FinishAfterEveryRPC().
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-ENTRY-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectOnRing(g, tr, "each endpoint placed by the hash of its first address", "r1", "r2", "r3")
			}},
			{Requirement: "A61-RH-REORDER-MOVES", Assert: expectReorderMoves},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}

// rhXDSAt is the ring of an xDS client at t, from the resources of the last
// xds step before t, which the client ACKed: the ring_hash cluster the
// route sends to, its ring sizes, and the endpoints of its load
// assignment's priority 0, each with its address then its additional
// addresses (A61), weighted by locality weight × endpoint weight (A42,
// Changes to the xDS Client).
func rhXDSAt(g gomega.Gomega, tr *trace.Trace, t time.Duration) rhView {
	s := tr.Header.Scenario
	var x *xds.Resources
	version := 0
	for _, st := range s.Steps {
		if a, ok := st.Action.(scenario.SetXDS); ok && st.After == nil && st.At < t {
			x = &a.Resources
			version++
		}
	}
	g.ExpectWithOffset(2, x).NotTo(gomega.BeNil(), "no xds step before %v", t)
	v := x.Version
	if v == "" {
		v = strconv.Itoa(version)
	}
	// The endpoints are what the ring is built from: their version must
	// have been ACKed (a type a step leaves unchanged keeps its version,
	// so the cluster's is not asked for).
	verdict.Require(spec.ACKed(tr, spec.TypeEDS, v), "the client did not ACK the endpoints of version %s", v)
	g.ExpectWithOffset(2, x.RouteConfigs).NotTo(gomega.BeEmpty())
	root := x.RouteConfigs[0].Cluster
	var cl *xds.Cluster
	for i := range x.Clusters {
		if x.Clusters[i].Name == root {
			cl = &x.Clusters[i]
		}
	}
	g.ExpectWithOffset(2, cl).NotTo(gomega.BeNil(), "cluster %s", root)
	g.ExpectWithOffset(2, cl.LBPolicy).To(gomega.Equal(xds.RingHash), "cluster %s's policy", root)
	var rv rhView
	var eps []ring.Endpoint
	for _, la := range x.Endpoints {
		if la.Cluster != root || len(la.Priorities) == 0 {
			continue
		}
		for _, loc := range la.Priorities[0].Localities {
			for _, ep := range loc.Endpoints {
				e := ring.Endpoint{Addrs: []string{spec.Addr(tr, ep.Addr)}, Weight: max(loc.Weight, 1) * max(ep.Weight, 1)}
				for _, a := range ep.AdditionalAddrs {
					e.Addrs = append(e.Addrs, spec.Addr(tr, a))
				}
				b, _, _ := ep.Addr.Split()
				eps = append(eps, e)
				rv.backends = append(rv.backends, b)
			}
		}
	}
	g.ExpectWithOffset(2, eps).NotTo(gomega.BeEmpty(), "cluster %s has no endpoints", root)
	rv.ring = ring.New(eps, cl.MinRingSize, cl.MaxRingSize)
	verdict.Require(!rv.ring.Ambiguous(), "the ring's sizes leave how many entries an endpoint gets to the implementation (A42)")
	return rv
}

// rhXDS: xDS cluster eds1 (ring_hash) over three IPv4 endpoints, the
// route's hash_policy on header x-key (A42), keys chosen so that the ring
// puts r1 on b1, r2 on b2 and r3 on b3.
func rhXDS() spec.Spec {
	backends := []string{"b1", "b2", "b3"}
	r := rhBuildRing(backends, []scenario.Addr{"b1/ipv4"}, []scenario.Addr{"b2/ipv4"}, []scenario.Addr{"b3/ipv4"})
	keys := []string{mustKey(r.KeyFor("k", nil, 0)), mustKey(r.KeyFor("k", nil, 1)), mustKey(r.KeyFor("k", nil, 2))}
	res := xdsResources(xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RingHash},
		xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{
			{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{{Addr: "b1/ipv4"}, {Addr: "b2/ipv4"}, {Addr: "b3/ipv4"}}},
		}}}})
	res.RouteConfigs[0].HashHeader = rhHeader
	b := scenario.New("xds-rh-header").
		Describe(fmt.Sprintf("xDS cluster eds1 (ring_hash) over b1/ipv4, b2/ipv4, b3/ipv4; the route hashes header x-key; r1 (x-key %s, on b1's entry), r2 (%s, b2), r3 (%s, b3) at 500, 520, 540 ms", keys[0], keys[1], keys[2])).
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(res))
	for i, k := range keys {
		b.At(500*time.Millisecond+time.Duration(i)*20*time.Millisecond, scenario.RPC(fmt.Sprintf("r%d", i+1), scenario.Metadata(rhHeader, k), scenario.WaitForReady(), scenario.Deadline(5*time.Second)))
	}
	b.FinishAfterEveryRPC().End(10 * time.Second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionRingHash,
		Labels:   []string{spec.LabelXDS},
		Scenario: b.MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-ENTRY-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectOnRing(g, tr, "hashed by the route's hash_policy; each endpoint placed by the hash of its address", "r1", "r2", "r3")
			}},
		},
		Agreement: synAgreement,
	}
}

// rhXDSDedup: xDS cluster eds1 (ring_hash) over b1, b2, b3 (IPv4), the
// route hashing x-key; r1, r2, r3 connect one endpoint each. At 1 s EDS
// version 2 has the same three endpoints with other attributes: b1's
// weight 3 and every endpoint's health HEALTHY. A61 (Ring Hash): endpoints
// are matched by their addresses, attributes ignored, and the endpoint map
// is updated in place, so each endpoint keeps its child and its
// connection: r4, r5, r6 (the same keys) at 1.5 s open no new connection,
// and land where the ring, now weighted (A42: locality weight × endpoint
// weight), says.
func rhXDSDedup() spec.Spec {
	backends := []string{"b1", "b2", "b3"}
	r := rhBuildRing(backends, []scenario.Addr{"b1/ipv4"}, []scenario.Addr{"b2/ipv4"}, []scenario.Addr{"b3/ipv4"})
	keys := []string{mustKey(r.KeyFor("k", nil, 0)), mustKey(r.KeyFor("k", nil, 1)), mustKey(r.KeyFor("k", nil, 2))}
	version := func(b1Weight uint32, health string) xds.Resources {
		var eps []xds.Endpoint
		for _, a := range []scenario.Addr{"b1/ipv4", "b2/ipv4", "b3/ipv4"} {
			eps = append(eps, xds.Endpoint{Addr: a, Health: health})
		}
		eps[0].Weight = b1Weight
		res := xdsResources(xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RingHash},
			xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{{Name: "z1", Weight: 1, Endpoints: eps}}}}})
		res.RouteConfigs[0].HashHeader = rhHeader
		return res
	}
	b := scenario.New("xds-rh-dedup").
		Describe(fmt.Sprintf("xDS cluster eds1 (ring_hash) over b1/ipv4, b2/ipv4, b3/ipv4; the route hashes header x-key; r1, r2, r3 (x-key %s, %s, %s: one endpoint each) at 500, 520, 540 ms; at 1 s EDS version 2: the same endpoints, b1 weighted 3, all HEALTHY; r4, r5, r6 (the same keys) at 1.5 s", keys[0], keys[1], keys[2])).
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(version(0, "")))
	rpcs := func(at time.Duration, first int) {
		for i, k := range keys {
			b.At(at+time.Duration(i)*20*time.Millisecond, scenario.RPC(fmt.Sprintf("r%d", first+i), scenario.Metadata(rhHeader, k), scenario.WaitForReady(), scenario.Deadline(5*time.Second)))
		}
	}
	rpcs(500*time.Millisecond, 1)
	b.At(time.Second, scenario.ServeXDS(version(3, xds.HealthHealthy)))
	rpcs(1500*time.Millisecond, 4)
	b.FinishAfterEveryRPC().End(10 * time.Second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionRingHash,
		Labels:   []string{spec.LabelXDS},
		Scenario: b.MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-DEDUP-NO-ATTRIBUTES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				served := map[string]bool{}
				for _, id := range []string{"r1", "r2", "r3"} {
					served[rhRPCOK(g, tr, id).Backend] = true
				}
				verdict.Require(len(served) == 3, "r1, r2, r3 were not served by three endpoints (%v): not every endpoint had a connection before the update", served)
				verdict.Require(spec.ACKed(tr, spec.TypeEDS, "2"), "the client did not ACK EDS version 2")
				v2, ok := spec.XDSServedAt(tr, "2")
				verdict.Require(ok, "EDS version 2 was never served")
				for _, id := range []string{"r4", "r5", "r6"} {
					rhRPCOK(g, tr, id)
				}
				end := spec.RPCResult(g, tr, "r6").T
				late := trace.Select(spec.Attempts(tr.Events), func(e trace.Event) bool { return e.T >= v2 && e.T <= end })
				g.Expect(late).To(gomega.BeEmpty(), "version 2 changed only the endpoints' attributes (weight, health): each endpoint, matched by its address, keeps its connection; new connection attempts:%s", spec.Render(late))
				closed := trace.Select(tr.Events, trace.OfKind(trace.KindConnClose), func(e trace.Event) bool { return e.T >= v2 && e.T <= end })
				g.Expect(closed).To(gomega.BeEmpty(), "no connection closed by the client after version 2:%s", spec.Render(closed))
			}},
			{Requirement: "A61-RH-ENTRY-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// After version 2 the ring is weighted (b1: 3 of 5).
				expectOnRing(g, tr, "the ring weighted by EDS: locality weight × endpoint weight", "r4", "r5", "r6")
			}},
		},
		Agreement: synAgreement,
	}
}

// rhXDSReorder: rh-ring through xDS, for clients whose ring_hash runs only
// there (grpc-js). Cluster eds1 (ring_hash) over three dual-stack EDS
// endpoints, each with its IPv6 address first and its IPv4 address as
// additional_addresses (A61, xDS dualstack), the route hashing x-key; keys
// chosen so that r1, r2, r3 land on b1, b2, b3. At 1 s EDS version 2 puts
// b1's IPv4 address first: A61 (Ring Hash) places an endpoint by the hash
// of its first address, so b1 moves on the ring; r4 (r1's key) lands on b2
// now and r5, on b2 or b3 before, lands on b1.
func rhXDSReorder() spec.Spec {
	before, after, km, k2, k3, kn := reorderKeys()
	version := func(list [][]scenario.Addr) xds.Resources {
		var eps []xds.Endpoint
		for _, ep := range list {
			eps = append(eps, xds.Endpoint{Addr: ep[0], AdditionalAddrs: ep[1:]})
		}
		res := xdsResources(xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RingHash},
			xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{{Name: "z1", Weight: 1, Endpoints: eps}}}}})
		res.RouteConfigs[0].HashHeader = rhHeader
		return res
	}
	rpc := func(id, key string) scenario.StartRPC {
		return scenario.RPC(id, scenario.Metadata(rhHeader, key), scenario.WaitForReady(), scenario.Deadline(5*time.Second))
	}
	b := scenario.New("xds-rh-reorder").
		Describe(fmt.Sprintf("xDS cluster eds1 (ring_hash) over [b1/ipv6 + b1/ipv4], [b2/…], [b3/…] (additional_addresses); the route hashes header x-key; r1 (x-key %s, on b1's entry), r2 (%s, b2), r3 (%s, b3) at 500, 520, 540 ms; at 1 s EDS version 2 puts b1's IPv4 address first; r4 (%s again, b2's entry now) and r5 (%s, b1's new entry) at 1.5 s", km, k2, k3, km, kn)).
		Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).Backend("b3", scenario.Dual).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.ServeXDS(version(before))).
		At(500*time.Millisecond, rpc("r1", km)).
		At(520*time.Millisecond, rpc("r2", k2)).
		At(540*time.Millisecond, rpc("r3", k3)).
		At(time.Second, scenario.ServeXDS(version(after))).
		At(1500*time.Millisecond, rpc("r4", km)).
		At(1520*time.Millisecond, rpc("r5", kn))
	b.FinishAfterEveryRPC().End(10 * time.Second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionRingHash,
		Labels:   []string{spec.LabelXDS, spec.LabelIPv6},
		Scenario: b.MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-ENTRY-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectOnRing(g, tr, "hashed by the route's hash_policy; each endpoint placed by the hash of its first address, EDS's address", "r1", "r2", "r3")
			}},
			{Requirement: "A61-RH-REORDER-MOVES", Assert: expectReorderMoves},
		},
		Agreement: synAgreement,
	}
}

// expectReorderMoves checks that r4 and r5, sent after b1's addresses were
// reordered, land where the ring with b1's new first address says, each on
// another endpoint than the ring before the reorder put its key. Its
// precondition: r1 landed where the first ring said
// (A61-RH-ENTRY-PER-ENDPOINT judges that).
func expectReorderMoves(g gomega.Gomega, tr *trace.Trace) {
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
}

// expectOnRing checks that each RPC of ids, answered, was served by the
// endpoint whose ring entry its x-key lands on, on the ring as it stood
// when the RPC was sent; how says how that ring was built.
func expectOnRing(g gomega.Gomega, tr *trace.Trace, how string, ids ...string) {
	for _, id := range ids {
		start := spec.RPCStart(g, tr, id)
		r := rhRPCOK(g, tr, id)
		key := rhKey(g, tr, id)
		w := rhAt(g, tr, start).walk(key)
		g.ExpectWithOffset(1, r.Backend).To(gomega.Equal(w[0]), "%s (x-key %s) lands on %s's entry (%s); served by %s", id, key, w[0], how, r.Backend)
	}
}
