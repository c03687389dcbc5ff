package a61

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// rhLazy: ring_hash over three dual-stack endpoints, picks driven by the
// x-key request header. Nothing connects before the first RPC; the RPC's
// hash lands on one endpoint, whose child is created then and connects
// (Happy Eyeballs over the endpoint's addresses); a second RPC with the same
// key goes to the same endpoint, on the same connection.
func rhLazy() spec.Spec {
	return spec.Spec{
		Doc: requirement.A61, Section: sectionRingHash,
		Scenario: scenario.New("rh-lazy").
			Describe("ring_hash (request hash: header x-key); the client gets [b1/ipv6, b1/ipv4], [b2/…], [b3/…]; r1 at 200 ms and r2 at 300 ms with x-key: k1").
			Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).Backend("b3", scenario.Dual).
			LB("ring_hash_experimental", `{"requestHashHeader":"x-key"}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"), scenario.EP("b2/ipv6", "b2/ipv4"), scenario.EP("b3/ipv6", "b3/ipv4"))).
			At(200*time.Millisecond, scenario.RPC("r1", scenario.Metadata("x-key", "k1"))).
			At(300*time.Millisecond, scenario.RPC("r2", scenario.Metadata("x-key", "k1"))).
			FinishAfterEveryRPC().
			End(5 * time.Second).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-LAZY-CHILD", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				start := spec.Of(tr, trace.KindRPCStart)
				g.Expect(start).NotTo(gomega.BeEmpty())
				early := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelNew, trace.KindSYN), func(e trace.Event) bool { return e.T < start[0].T })
				g.Expect(early).To(gomega.BeEmpty(), "no child, no connection, before ring_hash wants one")
				if !spec.HasPolicy(tr) {
					// From outside: only the wanted endpoint's backend is
					// connected to, on its first address.
					syns := spec.Attempts(tr.Events)
					g.Expect(syns).To(gomega.HaveLen(1), "one endpoint wanted: one connection attempt (its first address answers):%s", spec.Render(syns))
					return
				}
				g.Expect(spec.Of(tr, trace.KindSubchannelNew)).To(gomega.HaveLen(1), "one endpoint wanted: one subchannel (its first address answers)")
			}},
			{Requirement: "A61-RH-PICKER", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				res := spec.Of(tr, trace.KindRPCResult)
				g.Expect(res).To(gomega.HaveLen(2))
				g.Expect(res[0].Code).To(gomega.Equal("OK"), "r1 queued while its endpoint connected (IDLE: connect and queue)")
				g.Expect(res[1].Backend).To(gomega.Equal(res[0].Backend), "same hash, same endpoint")
				total := 0
				for _, n := range connectionsPerBackend(tr) {
					total += n
				}
				g.Expect(total).To(gomega.Equal(1), "r2 is delegated to the READY endpoint's connection")
			}},
		},
		Agreement: firstPassSYNs(5 * time.Second),
	}
}
