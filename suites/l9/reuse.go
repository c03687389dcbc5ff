package l9

import (
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// switchReuse: pick_first on [b1, b2, b3] serves on b1 while RPCs flow,
// one every reusePeriod; then the service config names round_robin, over
// the same three addresses. Nothing fails: the switch is the only event.
// L9, Swapping out balancer: "For connections already exist, they will be
// reused and copied to a new pool": round_robin's subchannel to b1 is the
// connection pick_first had open, so the client neither opens a second
// connection to b1 (no SYN to it after the switch) nor closes the first (no
// conn-close at b1 before the run ends); round_robin connects b2 and b3 and
// spreads the later RPCs over the three.
const (
	reuseFirstRPC = 100 * time.Millisecond
	reuseSwitchAt = 400 * time.Millisecond
	reuseTailAt   = 700 * time.Millisecond // RPCs from here judge round_robin
	reusePeriod   = 20 * time.Millisecond
	reuseRPCs     = 40 // the last at 880 ms
	reuseDeadline = 600 * time.Millisecond
)

func switchReuse() spec.Spec {
	b := backends(scenario.New("switch-reuse-connections").
		Describe("pick_first on [b1, b2, b3]; RPCs every 20 ms from 100 ms (no wait-for-ready, 600 ms deadline); 400 ms: the service config names round_robin")).
		LB("pick_first", `{}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4")))
	steps := every(reuseFirstRPC, reusePeriod, rpcIDs("u", reuseRPCs), scenario.Deadline(reuseDeadline))
	steps = append(steps, timed{reuseSwitchAt, scenario.Config("round_robin", `{}`)})
	s := addInOrder(b, steps).
		After(scenario.On("rpc-result").Times(reuseRPCs), scenario.Finish()).
		End(reuseFirstRPC + reuseRPCs*reusePeriod + reuseDeadline + 200*time.Millisecond).
		MustBuild()
	return spec.Spec{
		Doc: requirement.L9, Section: sectionSwap,
		Scenario:  s,
		Checks:    []spec.Check{reuse{ids: rpcIDs("u", reuseRPCs), tail: reuseTailAt, switchedAt: configAt}.check()},
		Agreement: resultsAgreement(),
	}
}

// configAt is when the client was given the new service config.
func configAt(tr *trace.Trace) time.Duration {
	cfg := spec.Of(tr, trace.KindConfigUpdate)
	verdict.Require(len(cfg) > 0, "the trace shows no config-update: the client was never given round_robin")
	return cfg[0].T
}

// reuse is the check of L9-SWITCH-REUSE-CONNECTIONS on a run where
// pick_first serves on one of switchBackends, RPCs ids flow, the policy
// becomes round_robin at switchedAt(tr) and the RPCs sent from tail on
// judge round_robin; pre, if set, adds preconditions.
type reuse struct {
	ids        []string
	tail       time.Duration
	switchedAt func(*trace.Trace) time.Duration
	pre        func(*trace.Trace)
}

// check: no SYN to the backend pick_first served on, and no close by the
// client of its connection to it, from the switch to the run's end.
func (r reuse) check() spec.Check {
	return spec.Check{Requirement: "L9-SWITCH-REUSE-CONNECTIONS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
		if r.pre != nil {
			r.pre(tr)
		}
		held, addr, at, end := r.requireJudgeable(g, tr)
		syns := trace.Select(spec.Of(tr, trace.KindSYN), func(e trace.Event) bool { return e.Addr == addr && e.T >= at && e.T <= end })
		closes := trace.Select(spec.Of(tr, trace.KindConnClose), func(e trace.Event) bool { return e.Addr == addr && e.T >= at && e.T < end })
		g.Expect(len(syns)+len(closes)).To(gomega.BeZero(),
			"round_robin should take over the connection to %s (%s) open before the switch at %s, neither opening another nor closing it before the run ends (%s); SYNs to it after the switch:%s\nthe client's closes of a connection to it:%s",
			held, addr, trace.FormatT(at), trace.FormatT(end), spec.Render(syns), spec.Render(closes))
	}}
}

// requireJudgeable states the check's preconditions and returns the
// backend pick_first served on, its address, when the switch came and when
// the run's last RPC ended (the client's channel closes after it). The
// connection to the held backend was open before the switch: a SYN to it
// answered, the channel READY, and every RPC sent before the switch
// answered by it; the switch took effect: the RPCs sent from r.tail on were
// answered by all three backends, so round_robin ran, and over the held
// backend too.
func (r reuse) requireJudgeable(g gomega.Gomega, tr *trace.Trace) (held, addr string, at, end time.Duration) {
	at = r.switchedAt(tr)
	var before []string
	for _, id := range r.ids {
		r := spec.RPCResult(g, tr, id)
		end = max(end, r.T)
		if spec.RPCStart(g, tr, id) < at {
			verdict.Require(r.Code == "OK", "RPC %s, sent before the switch, failed (%s): pick_first did not serve, so there was no connection to carry over", id, r.Code)
			if !slices.Contains(before, r.Backend) {
				before = append(before, r.Backend)
			}
		}
	}
	verdict.Require(len(before) == 1, "the RPCs sent before the switch were answered by %v, not one backend: the old policy did not act as pick_first", before)
	held = before[0]
	addr = spec.Addr(tr, scenario.Addr(held+"/ipv4"))
	opened := slices.ContainsFunc(spec.Of(tr, trace.KindSYNACK), func(e trace.Event) bool { return e.Addr == addr && e.T < at })
	verdict.Require(opened, "no SYN to %s (%s) was answered before the switch at %s: there was no open connection to carry over", held, addr, trace.FormatT(at))
	verdict.Require(stateAt(tr, at) == "READY", "the channel was %q, not READY, just before the switch at %s", stateAt(tr, at), trace.FormatT(at))
	var after []string
	for _, id := range r.ids {
		if spec.RPCStart(g, tr, id) >= r.tail {
			if r := spec.RPCResult(g, tr, id); r.Code == "OK" && !slices.Contains(after, r.Backend) {
				after = append(after, r.Backend)
			}
		}
	}
	slices.Sort(after)
	verdict.Require(slices.Equal(after, switchBackends),
		"the RPCs sent from %s on were answered by %v, not by all of %v: round_robin did not take over (over %s) in this run, so the switch says nothing",
		trace.FormatT(r.tail), after, switchBackends, held)
	return held, addr, at, end
}
