package a62

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// connectionLostIdle: pick_first is READY on b1 when b1's address goes down
// (the connection dies) and comes back 100 ms later; nothing reconnects for
// almost two seconds, until an RPC does.
func connectionLostIdle() spec.Spec {
	return spec.Spec{
		Doc: requirement.A62, Section: sectionBackground,
		Scenario: scenario.New("connection-lost-idle").
			Describe("READY on b1 of [b1, b2]; b1's address is down from 100 ms to 200 ms; an RPC at 2 s").
			Backend("b1", scenario.IPv4Only).
			Backend("b2", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
			At(100*time.Millisecond, scenario.Fault("b1/ipv4", scenario.Down)).
			At(200*time.Millisecond, scenario.Clear("b1/ipv4")).
			At(2*time.Second, scenario.RPC("r1")).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(4 * time.Second).
			MustBuild(),
		Checks: lostIdleChecks("r1", "b1/ipv4"),
		// Everything here is one RTT or a fixed step: the lab's timing
		// follows the simulator's within the usual slack.
		Agreement: lostAgreement(),
	}
}

// connectionLostBackendStopped: the same with the backend itself stopped
// and started again, a one-address list and a wait_for_ready RPC.
func connectionLostBackendStopped() spec.Spec {
	return spec.Spec{
		Doc: requirement.A62, Section: sectionBackground,
		Scenario: scenario.New("connection-lost-backend-stopped").
			Describe("READY on b1; b1 is stopped at 100 ms and started at 200 ms; a wait_for_ready RPC at 1.5 s").
			Backend("b1", scenario.IPv4Only).
			LB("pick_first", `{}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(100*time.Millisecond, scenario.Stop("b1")).
			At(200*time.Millisecond, scenario.Start("b1")).
			At(1500*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(4 * time.Second).
			MustBuild(),
		Checks:    lostIdleChecks("r1", "b1/ipv4"),
		Agreement: lostAgreement(),
	}
}

// lostIdleChecks: after the READY connection to addr is lost, pick_first
// reports IDLE and makes no connection attempt until RPC id, which makes it
// connect again and is answered.
func lostIdleChecks(id string, addr scenario.Addr) []spec.Check {
	return []spec.Check{
		{Requirement: "A62-CONNECTION-LOST-IDLE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			spec.ExpectStateSequence(g, tr, []string{connecting, ready, idle, connecting, ready}, "a lost connection makes pick_first IDLE; only the RPC makes it connect again")
		}},
		{Requirement: "A62-CONNECTION-LOST-IDLE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			// The IDLE that follows READY: a channel's own initial IDLE
			// (grpc-js and C-core report it) is not the loss.
			up := mustFirst(g, tr, 0, "READY channel state", spec.StateIs(tr, ready))
			lost := mustFirst(g, tr, up.T, "IDLE channel state after READY", spec.StateIs(tr, idle))
			rpc := spec.RPCStart(g, tr, id)
			quiet := trace.Window(tr.Events, lost.T, rpc)
			g.Expect(trace.Select(quiet, trace.OfKind(trace.KindSubchannelConnect))).To(gomega.BeEmpty(),
				"no subchannel may be asked to connect while IDLE, before the RPC")
			g.Expect(spec.Attempts(quiet)).To(gomega.BeEmpty(), "no SYN may leave while IDLE, before the RPC")
			g.Expect(rpc-lost.T).To(gomega.BeNumerically(">", time.Second),
				"the scenario should leave pick_first IDLE for over a second")
		}},
		{Requirement: "A62-CONNECTION-LOST-IDLE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			rpc := spec.RPCStart(g, tr, id)
			if spec.HasPolicy(tr) {
				// The policy's request, where the trace has it; from
				// outside, the SYN below is the evidence.
				mustFirst(g, tr, rpc, "subchannel-connect after the RPC", trace.OfKind(trace.KindSubchannelConnect))
			}
			g.Expect(spec.AttemptsTo(trace.Window(tr.Events, rpc, tr.Header.Scenario.End), spec.Addr(tr, addr))).
				NotTo(gomega.BeEmpty(), "the RPC should make pick_first connect to %s again", addr)
			r := spec.RPCResult(g, tr, id)
			g.Expect(r.Code).To(gomega.Equal("OK"), "%s: %s", id, r.Err)
			g.Expect(r.Backend).To(gomega.Equal("b1"))
		}},
	}
}

// lostAgreement is agreement for the lost-connection specs, with the
// subchannels' errors left out: the simulator's subchannel reports its IDLE
// after a lost connection with the error "connection lost", grpc-go's
// addrConn with none. The states and their times are still compared.
func lostAgreement() *compare.Options {
	o := agreement(labSlack, 0)
	o.Ignore = append(o.Ignore, "err")
	return o
}
