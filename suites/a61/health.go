package a61

import (
	"fmt"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// Which subchannels the policy keeps and whose health it watches are the
// policy's to see (subchannel-new, -shutdown, -health): those checks need
// its events.
//
// The health specs run in the simulator only: the lab runner applies no
// health step yet (a lab backend serves one health status for all its
// addresses, netlab.Backend.SetServing, and the lab channel has no
// healthCheckConfig, so its subchannels' health would be their raw state).

// healthService is the health service name the health specs' clients
// check (A17, healthCheckConfig): the lab backends' own service.
const healthService = "conform.lab.Backend"

// healthChecked is a service config running policy with client-side health
// checking of healthService on.
func healthChecked(policy string) string {
	return fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}],"healthCheckConfig":{"serviceName":%q}}`, policy, healthService)
}

// healthUnhealthyIsTF: round_robin over one endpoint, whose address reports
// NOT_SERVING from 100 ms to 300 ms: round_robin's state is its one child's.
func healthUnhealthyIsTF() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHealthWhy,
		Modes: []trace.Mode{spec.Sim},
		Scenario: scenario.New("health-unhealthy-is-tf").
			Describe("round_robin, health checked; the client gets [b1/ipv4]; b1 is NOT_SERVING from 100 ms to 300 ms; r1 at 150 ms, r2 at 350 ms").
			Backend("b1", scenario.IPv4Only).
			ServiceConfig(healthChecked("round_robin")).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(100*time.Millisecond, scenario.Health("b1/ipv4", scenario.NotServing).For(healthService)).
			At(150*time.Millisecond, scenario.RPC("r1")).
			At(300*time.Millisecond, scenario.Health("b1/ipv4", scenario.Serving).For(healthService)).
			At(350*time.Millisecond, scenario.RPC("r2")).
			End(400 * time.Millisecond).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HEALTH-UNHEALTHY-IS-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				var during []string
				for _, e := range spec.ChannelStates(tr) {
					if e.T >= 100*time.Millisecond && e.T < 300*time.Millisecond {
						during = append(during, e.State)
					}
				}
				g.Expect(during).To(gomega.Equal([]string{"TRANSIENT_FAILURE"}), "while b1 is unhealthy (IDLE would read as a lost connection)")
				res := spec.Of(tr, trace.KindRPCResult)
				g.Expect(res).To(gomega.HaveLen(2))
				g.Expect(res[0].Code).To(gomega.Equal("UNAVAILABLE"), "r1, while b1 is unhealthy")
				g.Expect(res[1].Backend).To(gomega.Equal("b1"), "r2, once b1 is healthy again")
			}},
			{Requirement: "A61-HEALTH-RAW-STATE-CONNECTS", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				b1 := spec.Addr(tr, "b1/ipv4")
				g.Expect(spec.SubchannelEvents(tr, b1, trace.KindSubchannelShutdown)).To(gomega.BeEmpty(), "b1's connection is kept")
				g.Expect(spec.SubchannelEvents(tr, b1, trace.KindSubchannelNew)).To(gomega.HaveLen(1))
				g.Expect(attemptsTo(tr, b1, 0)).To(gomega.HaveLen(1), "no reconnection")
				states := spec.ChannelStates(tr)
				g.Expect(states[len(states)-1].State).To(gomega.Equal("READY"), "healthy again at 300 ms, on the same connection")
			}},
			{Requirement: "A61-HEALTH-WATCH-CHOSEN", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				hs := spec.Of(tr, trace.KindSubchannelHealth)
				g.Expect(hs).NotTo(gomega.BeEmpty(), "no health watch")
				ready := map[string]time.Duration{}
				for _, e := range spec.Of(tr, trace.KindSubchannelState) {
					if _, ok := ready[e.Subchannel]; !ok && e.State == "READY" {
						ready[e.Subchannel] = e.T
					}
				}
				for _, e := range hs {
					t, ok := ready[e.Subchannel]
					g.Expect(ok && e.T >= t).To(gomega.BeTrue(), "health of %s, which was not chosen (READY) then", e.Subchannel)
				}
			}},
		},
	}
}

// healthPickFirstAlone: pick_first used directly: NOT_SERVING on its address
// changes nothing, since only a petiole turns health reporting on.
func healthPickFirstAlone() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionHealth,
		Modes: []trace.Mode{spec.Sim},
		Scenario: scenario.New("health-pick-first-alone").
			Describe("pick_first, health checked; the client gets [b1/ipv4]; b1 is NOT_SERVING from 100 ms; r1 at 150 ms").
			Backend("b1", scenario.IPv4Only).
			ServiceConfig(healthChecked("pick_first")).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(100*time.Millisecond, scenario.Health("b1/ipv4", scenario.NotServing).For(healthService)).
			At(150*time.Millisecond, scenario.RPC("r1")).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-HEALTH-PETIOLE-ONLY", Needs: spec.NeedsPolicy, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.Of(tr, trace.KindSubchannelHealth)).To(gomega.BeEmpty(), "pick_first on its own watches no health")
				res := spec.Of(tr, trace.KindRPCResult)
				g.Expect(res).To(gomega.HaveLen(1))
				g.Expect(res[0].Backend).To(gomega.Equal("b1"), "an unhealthy address still serves pick_first used directly")
			}},
			{Requirement: "A61-HEALTH-NONE-IS-RAW", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				var states []string
				for _, e := range spec.ChannelStates(tr) {
					states = append(states, e.State)
				}
				g.Expect(states).To(gomega.Equal([]string{"CONNECTING", "READY"}), "the raw connectivity state, whatever the health service says")
			}},
		},
	}
}
