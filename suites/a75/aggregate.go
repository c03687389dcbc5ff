package a75

import (
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// aggregateEDSThenDNS: an aggregate over an EDS cluster (round_robin over
// b1 and b2) and a LOGICAL_DNS cluster (the name resolves to b3); the
// aggregate itself names pick_first. RPCs alternate between b1 and b2 (the
// EDS cluster's policy, not the aggregate's); when b1 and b2 stop, RPCs
// fail over to the LOGICAL_DNS cluster.
func aggregateEDSThenDNS() spec.Spec {
	before, after := spec.RPCIDs("r", 4), spec.RPCIDs("f", 2)
	b := scenario.New("aggregate-eds-then-dns").
		Describe("aggregate (naming pick_first) over eds1 (round_robin: b1, b2) and dns1 (LOGICAL_DNS: b3); "+
			"four RPCs at 1 s; b1 and b2 stop at 2 s; two RPCs at 3 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true"). // the aggregate names pick_first: past A62's guard
		At(0, scenario.Resolve(scenario.EP("b3/ipv4"))).
		At(0, scenario.ServeXDS(spec.XDSResources("agg", []xds.Cluster{
			aggregate("agg", xds.PickFirst, "eds1", "dns1"),
			eds("eds1", xds.RoundRobin),
			{Name: "dns1", Type: xds.ClusterLogicalDNS, DNSHost: "dns1.conform"},
		}, assignment("eds1", addrs("b1/ipv4", "b2/ipv4")))))
	spec.SendRPCs(b, time.Second, before)
	b.At(2*time.Second, scenario.Stop("b1")).At(2*time.Second, scenario.Stop("b2"))
	spec.SendRPCs(b, 3*time.Second, after)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A75, Section: sectionAggregate,
		Scenario:  s,
		Agreement: spreadAgreement(s),
		Checks: []spec.Check{
			{Requirement: "A75-AGG-LB-FROM-UNDERLYING", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireXDSPickFirst(tr) // the aggregate's pick_first read as round_robin would spread them too
				got := spec.ServedByEach(g, tr, before...)
				g.Expect(got).To(gomega.ConsistOf("b1", "b2", "b1", "b2"),
					"eds1's round_robin should spread RPCs over b1 and b2 (the aggregate's pick_first would keep to one)")
			}},
			{Requirement: "A75-AGG-CLUSTER-PROVIDED-OPTIONAL", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectACK(g, tr, spec.TypeCDS, "1")
			}},
			{Requirement: "A75-AGG-PRIORITY-OVER-CDS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedByEach(g, tr, before...)).NotTo(gomega.ContainElement("b3"),
					"while eds1 is READY nothing should go to dns1, the aggregate's second cluster")
				g.Expect(spec.ServedByEach(g, tr, after...)).To(gomega.HaveEach("b3"),
					"once eds1's endpoints are gone the aggregate should fail over to dns1")
			}},
			{Requirement: "A75-AGG-PRIORITY-OVER-CDS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				root := lastTree(g, tr)
				g.Expect(root.is("priority")).To(gomega.BeTrue(), "the aggregate should be a priority policy at the root: %s", root)
				g.Expect(root.priorities()).To(gomega.Equal([]string{"eds1", "dns1"}),
					"one priority child per underlying cluster, in the aggregate's order")
				for _, c := range []string{"eds1", "dns1"} {
					leaf := root.child(g, c)
					g.Expect(leaf.find(func(n node) bool { return n.is("xds_override_host") })).To(gomega.HaveLen(1),
						"cluster %s's subtree should have its own xds_override_host: %s", c, leaf)
				}
			}, Needs: needsTree},
			{Requirement: "A75-NO-ENV-GUARD", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// A75, Temporary environment variable protection: no switch
				// turns the new behaviour on. With none set, the underlying
				// cluster's policy balances (the old tree would run the
				// aggregate's pick_first over the concatenated priorities)
				// and the aggregate fails over cluster by cluster.
				expectNoEnv(g, tr)
				spec.RequireXDSPickFirst(tr) // the aggregate's pick_first read as round_robin shows A75 by chance
				// From outside, a client that shows none of A75's behaviour
				// here looks the same whether the feature is behind a switch
				// or was never built (A75-AGG-LB-FROM-UNDERLYING judges that).
				spread := spec.ServedByEach(g, tr, before...)
				verdict.Require(slices.Equal(slices.Sorted(slices.Values(spread)), []string{"b1", "b1", "b2", "b2"}),
					"the client shows no A75 behaviour in this run (r1…r4 went to %v): a switch it needs and a feature it lacks look the same", spread)
				g.Expect(spec.ServedByEach(g, tr, after...)).To(gomega.HaveEach("b3"),
					"without A75's switch, the aggregate should fail over to its next cluster, dns1")
			}},
			{Requirement: "A75-NO-ENV-GUARD", Needs: needsTree, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// With no switch set, the new tree is in force: a priority
				// over one subtree per cluster, each with xds_override_host
				// (A75's changed policy) above the cluster's own priority.
				expectNoEnv(g, tr)
				root := lastTree(g, tr)
				g.Expect(root.is("priority")).To(gomega.BeTrue(), "without A75's switch, the aggregate should be a priority policy at the root: %s", root)
				g.Expect(root.priorities()).To(gomega.Equal([]string{"eds1", "dns1"}), "one child per underlying cluster")
				for _, c := range root.priorities() {
					oh := root.child(g, c).find(func(n node) bool { return n.is("xds_override_host") })
					g.Expect(oh).To(gomega.HaveLen(1), "cluster %s should have one xds_override_host: %s", c, root)
					prio := oh[0].children()
					g.Expect(prio).To(gomega.HaveLen(1))
					g.Expect(prio[0].is("priority")).To(gomega.BeTrue(),
						"without A75's switch, %s's xds_override_host should sit above the priority choosing among its priorities: %s", c, oh[0])
				}
			}},
			{Requirement: "A75-AGG-PER-CLUSTER-POLICIES-ABOVE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				root := lastTree(g, tr)
				for _, c := range root.priorities() {
					leaf := root.child(g, c)
					g.Expect(leaf.is("outlier_detection")).To(gomega.BeTrue(), "cluster %s's subtree should start with outlier_detection: %s", c, leaf)
					oh := leaf.children()
					g.Expect(oh).To(gomega.HaveLen(1))
					g.Expect(oh[0].is("xds_override_host")).To(gomega.BeTrue(), "outlier_detection's child in %s should be xds_override_host: %s", c, leaf)
					prio := oh[0].children()
					g.Expect(prio).To(gomega.HaveLen(1))
					g.Expect(prio[0].is("priority")).To(gomega.BeTrue(), "the policies above %s's priority should be outlier_detection and xds_override_host: %s", c, leaf)
				}
			}, Needs: needsTree},
		},
	}
}

// aggregateLBPolicyIgnored: an aggregate over one EDS cluster
// (round_robin over b1 and b2). The aggregate names pick_first, then
// ring_hash; four RPCs after each version are spread over b1 and b2 the
// same way, and the EDS cluster's subtree is unchanged. pick_first through
// xDS is switched on (GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG, A62's guard),
// so that a client still behind the guard does not NACK the aggregate for
// naming it.
func aggregateLBPolicyIgnored() spec.Spec {
	v1, v2 := spec.RPCIDs("r", 4), spec.RPCIDs("s", 4)
	res := func(lb string) xds.Resources {
		return spec.XDSResources("agg", []xds.Cluster{
			aggregate("agg", lb, "eds1"),
			eds("eds1", xds.RoundRobin),
		}, assignment("eds1", addrs("b1/ipv4", "b2/ipv4")))
	}
	b := scenario.New("aggregate-lb-policy-ignored").
		Describe("aggregate over eds1 (round_robin: b1, b2); the aggregate names pick_first, then ring_hash at 2 s; four RPCs after each").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true").
		At(0, scenario.ServeXDS(res(xds.PickFirst)))
	spec.SendRPCs(b, time.Second, v1)
	b.At(2*time.Second, scenario.ServeXDS(res(xds.RingHash)))
	spec.SendRPCs(b, 3*time.Second, v2)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A75, Section: sectionAggregate,
		Scenario:  s,
		Agreement: spreadAgreement(s),
		Checks: []spec.Check{
			{Requirement: "A75-AGG-CLUSTER-PROVIDED-OPTIONAL", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectACK(g, tr, spec.TypeCDS, "1")
				expectACK(g, tr, spec.TypeCDS, "2")
			}},
			{Requirement: "A75-AGG-LB-POLICY-IGNORED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				spec.RequireXDSPickFirst(tr) // an aggregate's pick_first read as round_robin would spread them too
				g.Expect(spec.ServedByEach(g, tr, v1...)).To(gomega.ConsistOf("b1", "b2", "b1", "b2"),
					"with the aggregate naming pick_first, eds1's round_robin should spread RPCs over b1 and b2")
				g.Expect(spec.ServedByEach(g, tr, v2...)).To(gomega.ConsistOf("b1", "b2", "b1", "b2"),
					"with the aggregate naming ring_hash, eds1's round_robin should still spread RPCs over b1 and b2")
			}},
			{Requirement: "A75-AGG-LB-POLICY-IGNORED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				// The LB config the channel has at the end is the one it had
				// after the first version: changing the aggregate's policy
				// changed nothing. (A config-update is recorded only when the
				// config changes.)
				cs := configs(tr)
				g.Expect(cs).NotTo(gomega.BeEmpty(), "the channel should have received an LB config")
				g.Expect(cs).To(gomega.HaveLen(1), "changing the aggregate's LB policy should not change the channel's LB config:%s", spec.Render(cs))
				root := parseTree(g, cs[0].Detail)
				g.Expect(root.child(g, "eds1").endpointPolicies()).To(gomega.HaveEach(gomega.HaveSuffix("round_robin")),
					"eds1's localities should use eds1's round_robin: %s", root)
			}, Needs: needsTree},
		},
	}
}

// aggregateNestedFlattened: agg1 = [agg2, eds3, eds1] with agg2 = [eds1,
// eds2]: A37's depth-first flattening with de-duplication gives [eds1,
// eds2, eds3] (eds1 kept at its first position), one priority policy over
// the three. eds1 serves first; when b1 stops, eds2 (b2) serves, then,
// when b2 stops, eds3 (b3).
func aggregateNestedFlattened() spec.Spec {
	b := scenario.New("aggregate-nested-flattened").
		Describe("agg1 = [agg2, eds3, eds1], agg2 = [eds1, eds2]; eds1: b1, eds2: b2, eds3: b3; "+
			"r1 at 1 s; b1 stops at 2 s, r2 at 3 s; b2 stops at 4 s, r3 at 5 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(spec.XDSResources("agg1", []xds.Cluster{
			aggregate("agg1", "", "agg2", "eds3", "eds1"),
			aggregate("agg2", "", "eds1", "eds2"),
			eds("eds1", ""), eds("eds2", ""), eds("eds3", ""),
		}, assignment("eds1", addrs("b1/ipv4")), assignment("eds2", addrs("b2/ipv4")), assignment("eds3", addrs("b3/ipv4")))))
	spec.SendRPCs(b, time.Second, []string{"r1"})
	b.At(2*time.Second, scenario.Stop("b1"))
	spec.SendRPCs(b, 3*time.Second, []string{"r2"})
	b.At(4*time.Second, scenario.Stop("b2"))
	spec.SendRPCs(b, 5*time.Second, []string{"r3"})
	s := b.FinishAfterEveryRPC().
		End(12 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A75, Section: sectionRationale,
		Scenario:  s,
		Agreement: agreement(s),
		Checks: []spec.Check{
			{Requirement: "A75-AGG-NESTED-FLATTENED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ServedByEach(g, tr, "r1", "r2", "r3")).To(gomega.Equal([]string{"b1", "b2", "b3"}),
					"the flattened order should be eds1, eds2, eds3 (eds1 at its first position)")
			}},
			{Requirement: "A75-AGG-NESTED-FLATTENED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				root := lastTree(g, tr)
				g.Expect(root.is("priority")).To(gomega.BeTrue(), "the root should be one priority policy: %s", root)
				g.Expect(root.priorities()).To(gomega.Equal([]string{"eds1", "eds2", "eds3"}),
					"one flat list of leaf clusters, each once, at its first position")
				// The only priority policies below the root are the leaves'
				// own (children "<leaf>/p<N>"): no aggregate is a priority
				// nested in another.
				for _, p := range root.find(func(n node) bool { return n.is("priority") })[1:] {
					for _, c := range p.priorities() {
						g.Expect(c).To(gomega.MatchRegexp(`^eds[123]/p[0-9]+$`),
							"a nested priority policy should only choose among a leaf's priorities: %s", p)
					}
				}
			}, Needs: needsTree},
			{Requirement: "A75-AGG-PRIORITY-OVER-CDS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectACK(g, tr, spec.TypeCDS, "1")
				root := lastTree(g, tr)
				for _, c := range root.priorities() {
					g.Expect(strings.HasPrefix(c, "agg")).To(gomega.BeFalse(), "an aggregate should not be a child: %s", root)
				}
			}, Needs: needsTree},
		},
	}
}

// aggregateUnderlyingPickFirst: the converse of aggregateLBPolicyIgnored,
// with the distinctive policy on the underlying cluster. The aggregate
// names round_robin; eds1, its one cluster, has PickFirst over b1 and b2
// (pick_first through xDS switched on: GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG,
// A62's guard). Every RPC reaches b1: eds1's pick_first, not the
// aggregate's round_robin. A client that falls back to round_robin for a
// policy it does not know would spread them, and is told apart here (in
// aggregateLBPolicyIgnored it would look right).
func aggregateUnderlyingPickFirst() spec.Spec {
	ids := spec.RPCIDs("r", 4)
	b := scenario.New("aggregate-underlying-pick-first").
		Describe("aggregate (naming round_robin) over eds1 (pick_first: b1, b2); four RPCs at 1 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true").
		At(0, scenario.ServeXDS(spec.XDSResources("agg", []xds.Cluster{
			aggregate("agg", xds.RoundRobin, "eds1"),
			eds("eds1", xds.PickFirst),
		}, assignment("eds1", addrs("b1/ipv4", "b2/ipv4")))))
	spec.SendRPCs(b, time.Second, ids)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A75, Section: sectionAggregate,
		Scenario:  s,
		Agreement: agreement(s),
		Checks: []spec.Check{
			{Requirement: "A75-AGG-LB-FROM-UNDERLYING", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectACK(g, tr, spec.TypeCDS, "1")
				spec.RequireXDSPickFirst(tr)
				g.Expect(spec.ServedByEach(g, tr, ids...)).To(gomega.HaveEach("b1"),
					"eds1's pick_first should send every RPC to b1, its first endpoint (the aggregate's round_robin would spread them)")
			}},
			{Requirement: "A75-AGG-LB-POLICY-IGNORED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectACK(g, tr, spec.TypeCDS, "1")
				spec.RequireXDSPickFirst(tr)
				g.Expect(spec.ServedByEach(g, tr, ids...)).To(gomega.HaveEach("b1"),
					"the aggregate's round_robin should be ignored: every RPC on b1, by eds1's pick_first")
			}},
			{Requirement: "A75-AGG-LB-POLICY-IGNORED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				root := lastTree(g, tr)
				g.Expect(root.child(g, "eds1").endpointPolicies()).To(gomega.BeEmpty(),
					"eds1 runs pick_first over its localities, with no weighted_target of round_robin: %s", root)
				g.Expect(root.child(g, "eds1").find(func(n node) bool { return n.is("pick_first") })).NotTo(gomega.BeEmpty(),
					"eds1's subtree should hold its pick_first: %s", root)
			}, Needs: needsTree},
		},
	}
}
