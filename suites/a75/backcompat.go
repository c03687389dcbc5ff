package a75

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// A75, Aggregate Cluster Changes: the migration switch
// GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT=true brings back the
// aggregate cluster's LB policy. The seed text says only that gRPC then
// uses the aggregate's policy (A75-AGG-BACKCOMPAT-ENV); the latest revision
// says the underlying clusters run it, in the new tree
// (A75-AGG-BACKCOMPAT-UNDERLYING). One scenario serves both: the
// reference follows the latest wording, which satisfies the seed's.

// aggregateBackwardCompat: with the switch set (and pick_first through xDS
// switched on: GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG), an aggregate naming
// pick_first over eds1 (round_robin: b1, b2) and eds2 (round_robin: b3,
// b4). Four RPCs at 1 s all reach b1: eds1 runs the aggregate's pick_first
// (its own round_robin would alternate b1 and b2). b1 and b2 stop at 2 s;
// four RPCs at 3 s fail over to eds2 and all reach b3: eds2 runs
// pick_first too (not b3 and b4 in turn), under the aggregate's priority
// policy.
func aggregateBackwardCompat() spec.Spec {
	before, after := spec.RPCIDs("r", 4), spec.RPCIDs("f", 4)
	b := scenario.New("aggregate-backward-compat").
		Describe("GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT=true; aggregate (pick_first) over eds1 (round_robin: b1, b2) "+
			"and eds2 (round_robin: b3, b4); four RPCs at 1 s; b1 and b2 stop at 2 s; four RPCs at 3 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		Backend("b4", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvAggregateClusterBackwardCompat, "true").
		Env(scenario.EnvPickFirstLBConfig, "true"). // the aggregate's pick_first, past A62's guard
		At(0, scenario.ServeXDS(spec.XDSResources("agg", []xds.Cluster{
			aggregate("agg", xds.PickFirst, "eds1", "eds2"),
			eds("eds1", xds.RoundRobin),
			eds("eds2", xds.RoundRobin),
		}, assignment("eds1", addrs("b1/ipv4", "b2/ipv4")), assignment("eds2", addrs("b3/ipv4", "b4/ipv4")))))
	spec.SendRPCs(b, time.Second, before)
	b.At(2*time.Second, scenario.Stop("b1")).At(2*time.Second, scenario.Stop("b2"))
	spec.SendRPCs(b, 3*time.Second, after)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A75, Section: sectionAggregate,
		Scenario:  s,
		Agreement: agreement(s),
		Checks: []spec.Check{
			{Requirement: "A75-AGG-BACKCOMPAT-ENV", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectSwitch(g, tr, "true")
				spec.RequireXDSPickFirst(tr)
				g.Expect(spec.ServedByEach(g, tr, before...)).To(gomega.HaveEach("b1"),
					"with the switch, the aggregate's pick_first should keep every RPC on b1 (eds1's own round_robin would alternate b1 and b2)")
			}},
			{Requirement: "A75-AGG-BACKCOMPAT-UNDERLYING", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectSwitch(g, tr, "true")
				spec.RequireXDSPickFirst(tr)
				g.Expect(spec.ServedByEach(g, tr, before...)).To(gomega.HaveEach("b1"),
					"eds1 should run the aggregate's pick_first: every RPC on its first endpoint")
				g.Expect(spec.ServedByEach(g, tr, after...)).To(gomega.HaveEach("b3"),
					"once eds1 is down, eds2 should serve, running the aggregate's pick_first too: every RPC on b3, none on b4")
			}},
			{Requirement: "A75-AGG-BACKCOMPAT-UNDERLYING", Needs: needsTree, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				root := lastTree(g, tr)
				g.Expect(root.is("priority")).To(gomega.BeTrue(), "the aggregate should still be a priority policy at the root: %s", root)
				g.Expect(root.priorities()).To(gomega.Equal([]string{"eds1", "eds2"}), "one child per underlying cluster, in order")
				for _, c := range root.priorities() {
					leaf := root.child(g, c)
					g.Expect(leaf.is("outlier_detection")).To(gomega.BeTrue(), "cluster %s keeps its own subtree: %s", c, leaf)
					g.Expect(leaf.find(func(n node) bool { return n.is("pick_first") })).NotTo(gomega.BeEmpty(),
						"cluster %s should run the aggregate's pick_first: %s", c, leaf)
					g.Expect(leaf.find(func(n node) bool { return n.is("round_robin") })).To(gomega.BeEmpty(),
						"cluster %s's own round_robin should not run: %s", c, leaf)
				}
			}},
		},
	}
}

// expectSwitch checks that the run's scenario set A75's migration switch
// to value: the trace header records the client's environment.
func expectSwitch(g gomega.Gomega, tr *trace.Trace, value string) {
	g.ExpectWithOffset(1, tr.Header.Scenario.Client.Env).To(
		gomega.HaveKeyWithValue(scenario.EnvAggregateClusterBackwardCompat, value),
		"the client should run with %s=%s", scenario.EnvAggregateClusterBackwardCompat, value)
}

// expectNoEnv checks that the run's client had no A75 switch set
// (GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT, the only variable A75
// names): the scenario's environment is the only one a client under test
// gets (the reference through its options, a driver as its process's
// environment, with none inherited from conform's). Other documents'
// switches may be set: A62's pick_first guard is, so that a client still
// behind it accepts the aggregate naming pick_first.
func expectNoEnv(g gomega.Gomega, tr *trace.Trace) {
	g.ExpectWithOffset(1, tr.Header.Scenario.Client.Env).NotTo(gomega.HaveKey(scenario.EnvAggregateClusterBackwardCompat),
		"the client should run without A75's switch")
}
