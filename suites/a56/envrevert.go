package a56

import (
	"strings"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// removedChildEnvRevert: A115, Temporary environment variable protection:
// GRPC_EXPERIMENTAL_ENABLE_PRIORITY_LB_CHILD_POLICY_CACHE=true reverts to
// the child policy cache. The scenario is removed-child-latest's (the
// config's "revision": "latest", whose policy destroys a removed child at
// once) with the switch set in the client's environment: p0, dropped from
// the config at 200 ms, is kept deactivated for 15 minutes with its
// subchannel and connection, and named again it is the same child.
func removedChildEnvRevert() spec.Spec {
	s := removedThenReadded("removed-child-env-revert", "latest")
	s.Description += "; " + scenario.EnvPriorityChildPolicyCache + "=true"
	s.Client.Env = map[string]string{scenario.EnvPriorityChildPolicyCache: "true"}
	if err := s.Validate(); err != nil {
		panic(err)
	}
	return spec.Spec{
		Doc: requirement.A56, Section: sectionLifetime,
		Scenario: s,
		Checks: []spec.Check{
			{Requirement: "A56-CHILD-CACHE-ENV-REVERT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectRevertSwitch(g, tr)
				servedAsPlanned(g, tr)
				g.Expect(freshSYNs(tr, "b1/ipv4")).To(gomega.HaveLen(1),
					"p0 is kept through its removal, with its connection (without the switch the latest revision opens a new one)")
			}},
			{Requirement: "A56-CHILD-CACHE-ENV-REVERT", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				slack := spec.Within(tr, labSlack)
				expectRevertSwitch(g, tr)
				cu := configUpdates(g, tr, 3)
				removed, chosen := cu[0], cu[2]
				starts := ofTimer(timers(tr, timerDeactivation), trace.KindTimerStart)
				g.Expect(starts).NotTo(gomega.BeEmpty(), "p0, removed, is deactivated, not destroyed")
				spec.RequireSteadyMachine(tr, min(starts[0].T, removed), max(starts[0].T, removed), "deactivation of p0 when the config drops it")
				g.Expect(starts[0].T).To(beAbout(removed, slack), "p0 is deactivated when the config drops it")
				g.Expect(starts[0].Duration).To(gomega.Equal(deactivationTimeout), "kept for 15 minutes")
				expectNone(g, shutdownsBefore(tr, "b1/ipv4", spec.RPCResult(g, tr, "r4").T), "p0 is kept, with its subchannel")
				g.Expect(subchannelsFor(tr, "b1/ipv4")).To(gomega.HaveLen(1), "named again, p0 is the same child")
				g.Expect(between(timers(tr, timerFailover), chosen, spec.RPCResult(g, tr, "r4").T+1)).To(gomega.BeEmpty(),
					"p0 chosen again is reactivated, not created (a new child starts a failover timer)")
			}},
		},
		Agreement: configAgreement(),
	}
}

// expectRevertSwitch checks that the run's client had A115's switch set
// and ran the latest revision, which destroys removed children without it.
func expectRevertSwitch(g gomega.Gomega, tr *trace.Trace) {
	c := tr.Header.Scenario.Client
	g.ExpectWithOffset(1, c.Env).To(gomega.HaveKeyWithValue(scenario.EnvPriorityChildPolicyCache, "true"),
		"the client should run with %s=true", scenario.EnvPriorityChildPolicyCache)
	g.ExpectWithOffset(1, strings.Contains(c.LBConfig, `"revision":"latest"`)).To(gomega.BeTrue(),
		"the priority policy should follow the latest revision (A115): %s", c.LBConfig)
}
