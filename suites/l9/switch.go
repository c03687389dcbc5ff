package l9

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// The switch specs: pick_first on [b1, b2, b3] serves (on b1) while RPCs
// flow, one every switchPeriod, none wait-for-ready, each with a deadline
// of switchDeadline; then the SYNs of all three are dropped (the live
// connection to b1 is kept) and the config names round_robin, whose
// connections hang until the faults clear and a retransmitted SYN gets
// through, about a second after the first. A graceful switch (L9, Swapping
// out balancer) keeps pick_first serving meanwhile: no RPC waits, none
// fails, the channel stays READY; round_robin then takes over and spreads
// the last RPCs over the three backends. A channel that drops pick_first at
// once leaves the RPCs queued behind round_robin's CONNECTING until their
// deadlines pass. A channel that carries pick_first's connection to b1 over
// to round_robin (L9: existing connections are reused; the reference does,
// and switch-reuse-connections judges it) has round_robin READY on b1 at
// the switch, so round_robin serves on b1 alone until b2 and b3 connect;
// the checks hold either way.
//
// Times are from the timeline's start t0: 0 for a service config from the
// resolver; later through xDS, whose first resources take a few round
// trips to arrive.
type switchTimes struct {
	t0 time.Duration
}

const (
	switchFirstRPC = 100 * time.Millisecond  // the first RPC
	switchDropAt   = 300 * time.Millisecond  // SYNs dropped from here
	switchAt       = 400 * time.Millisecond  // the config names round_robin
	switchClearAt  = 1000 * time.Millisecond // SYNs answered again
	switchTailAt   = 1700 * time.Millisecond // RPCs from here judge round_robin
	switchPeriod   = 20 * time.Millisecond
	switchRPCs     = 90                     // the last at 1.88 s
	switchDeadline = 600 * time.Millisecond // a hard switch holds RPCs ~1 s
)

var switchBackends = []string{"b1", "b2", "b3"}

func (s switchTimes) at(d time.Duration) time.Duration { return s.t0 + d }

// timeline adds the RPCs and the faults; config is the switch itself.
func (s switchTimes) timeline(b *scenario.Builder, config scenario.Action) *scenario.Builder {
	steps := every(s.at(switchFirstRPC), switchPeriod, rpcIDs("s", switchRPCs), scenario.Deadline(switchDeadline))
	for _, name := range switchBackends {
		steps = append(steps, timed{s.at(switchDropAt), scenario.Fault(scenario.Addr(name+"/ipv4"), scenario.Drop)},
			timed{s.at(switchClearAt), scenario.Clear(scenario.Addr(name + "/ipv4"))})
	}
	steps = append(steps, timed{s.at(switchAt), config})
	return addInOrder(b, steps).After(scenario.On("rpc-result").Times(switchRPCs), scenario.Finish()).
		End(s.at(switchFirstRPC + switchRPCs*switchPeriod + switchDeadline + 200*time.Millisecond))
}

func backends(b *scenario.Builder) *scenario.Builder {
	for _, name := range switchBackends {
		b.Backend(name, scenario.IPv4Only)
	}
	return b
}

// switchServiceConfig: the switch as a new service config from the
// resolver (the driver protocol's config command).
func switchServiceConfig() spec.Spec {
	t := switchTimes{}
	b := backends(scenario.New("switch-service-config").
		Describe("pick_first on [b1, b2, b3]; RPCs every 20 ms (no wait-for-ready, 600 ms deadline); 300 ms: every SYN dropped; 400 ms: the service config names round_robin; 1 s: SYNs answered again")).
		LB("pick_first", `{}`).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4")))
	s := t.timeline(b, scenario.Config("round_robin", `{}`)).MustBuild()
	return spec.Spec{
		Doc: requirement.L9, Section: sectionSwap,
		Scenario:  s,
		Checks:    t.checks(nil),
		Agreement: resultsAgreement(),
	}
}

// The xDS form: cluster eds1's policy changes from PickFirst to round_robin
// in a new CDS resource (one locality of the three endpoints).
const switchCluster = "eds1"

func switchXDSResources(policy string) xds.Resources {
	var eps []xds.Endpoint
	for _, name := range switchBackends {
		eps = append(eps, xds.Endpoint{Addr: scenario.Addr(name + "/ipv4")})
	}
	return spec.XDSResources(switchCluster,
		[]xds.Cluster{{Name: switchCluster, Type: xds.ClusterEDS, LBPolicy: policy}},
		xds.LoadAssignment{Cluster: switchCluster, Priorities: []xds.Priority{{Localities: []xds.Locality{
			{Name: "z1", Weight: 1, Endpoints: eps},
		}}}})
}

// switchCDS: the switch as a CDS update changing the cluster's LB policy.
func switchCDS() spec.Spec {
	t := switchTimes{t0: 500 * time.Millisecond}
	b := backends(scenario.New("switch-cds-lb-policy").
		Describe("xDS cluster eds1 with PickFirst over [b1, b2, b3]; RPCs every 20 ms from 0.6 s (no wait-for-ready, 600 ms deadline); 0.8 s: every SYN dropped; 0.9 s: eds1's policy becomes round_robin; 1.5 s: SYNs answered again")).
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true").
		At(0, scenario.ServeXDS(switchXDSResources(xds.PickFirst)))
	s := t.timeline(b, scenario.ServeXDS(switchXDSResources(xds.RoundRobin))).MustBuild()
	pre := func(tr *trace.Trace) {
		spec.RequireXDSPickFirst(tr)
		verdict.Require(spec.ACKed(tr, spec.TypeCDS, "2"), "the client did not ACK the Cluster naming round_robin (version 2): there was no switch to judge")
	}
	// The switch's xDS form carries pick_first's connection to b1 over too
	// (switch-reuse-connections is the service config's form, without
	// faults): a client that reopens it sends a SYN, dropped until 1.5 s.
	carried := reuse{ids: rpcIDs("s", switchRPCs), tail: t.at(switchTailAt), switchedAt: cdsServedAt, pre: pre}
	return spec.Spec{
		Doc: requirement.L9, Section: sectionSwap,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Checks:    append(t.checks(pre), carried.check()),
		Agreement: resultsAgreement(),
	}
}

// cdsServedAt is when the management server began serving the Cluster
// naming round_robin (version 2): the client may act on it before it ACKs.
func cdsServedAt(tr *trace.Trace) time.Duration {
	at, ok := spec.XDSServedAt(tr, "2")
	verdict.Require(ok, "the Cluster naming round_robin (version 2) was never served: there was no switch to judge")
	return at
}

// checks are the switch specs' checks; pre, if set, adds preconditions.
func (t switchTimes) checks(pre func(*trace.Trace)) []spec.Check {
	if pre == nil {
		pre = func(*trace.Trace) {}
	}
	return []spec.Check{
		{Requirement: "L9-SWITCH-OLD-SERVES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			pre(tr)
			t.requireOldServed(g, tr)
			var failed []string
			for _, id := range rpcIDs("s", switchRPCs) {
				if r := spec.RPCResult(g, tr, id); r.Code != "OK" {
					requireNoLongStall(tr, id, spec.RPCStart(g, tr, id))
					failed = append(failed, fmt.Sprintf("%s (sent %s): %s %s", id, trace.FormatT(spec.RPCStart(g, tr, id)), r.Code, r.Err))
				}
			}
			g.Expect(failed).To(gomega.BeEmpty(), "every RPC is served during the switch, none waits past its %v deadline for the new policy", switchDeadline)
			ready := false
			for _, e := range spec.ChannelStates(tr) {
				g.Expect(!ready || e.State == "READY").To(gomega.BeTrue(),
					"the channel left READY (%s at %s) during the switch:\n%s", e.State, trace.FormatT(e.T), spec.Render(spec.ChannelStates(tr)))
				ready = ready || e.State == "READY"
			}
		}},
		{Requirement: "L9-SWITCH-ON-CONFIG", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			pre(tr)
			t.requireOldServed(g, tr)
			tail := t.at(switchTailAt)
			spec.RequireConnectedBefore(tr, tail, switchBackends...)
			got := t.servedFrom(g, tr, tail)
			g.Expect(got).To(gomega.Equal(switchBackends), "round_robin, named by the new config, serves the RPCs sent from %s on", trace.FormatT(tail))
		}},
	}
}

// requireOldServed: the RPCs sent before the switch were all answered, by
// one backend: pick_first served, so the switch is from it.
func (t switchTimes) requireOldServed(g gomega.Gomega, tr *trace.Trace) {
	var before []string
	for _, id := range rpcIDs("s", switchRPCs) {
		if spec.RPCStart(g, tr, id) < t.at(switchAt) {
			r := spec.RPCResult(g, tr, id)
			verdict.Require(r.Code == "OK", "RPC %s, sent before the switch, failed (%s): the old policy never served, so the switch says nothing", id, r.Code)
			if !slices.Contains(before, r.Backend) {
				before = append(before, r.Backend)
			}
		}
	}
	verdict.Require(len(before) == 1, "the RPCs sent before the switch were answered by %v, not one backend: the old policy did not act as pick_first", before)
}

// servedFrom are the backends that answered the RPCs sent at from or later,
// sorted.
func (t switchTimes) servedFrom(g gomega.Gomega, tr *trace.Trace, from time.Duration) []string {
	var out []string
	for _, id := range rpcIDs("s", switchRPCs) {
		if spec.RPCStart(g, tr, id) < from {
			continue
		}
		if r := spec.RPCResult(g, tr, id); r.Code == "OK" && !slices.Contains(out, r.Backend) {
			out = append(out, r.Backend)
		}
	}
	sort.Strings(out)
	return out
}

// switchStallLimit is the longest stall of the lab machine that leaves an
// RPC's deadline judgeable: a hard switch holds RPCs about a second, a
// graceful one a few milliseconds, and the deadline is between.
const switchStallLimit = 100 * time.Millisecond

// requireNoLongStall: the lab machine did not stall switchStallLimit or
// more while RPC id, sent at start, waited for its deadline; a stall that
// long could have made a served RPC miss it.
func requireNoLongStall(tr *trace.Trace, id string, start time.Duration) {
	for _, st := range spec.Stalls(tr) {
		if st.Duration >= switchStallLimit && st.T < start+switchDeadline && st.T+st.Duration > start {
			verdict.Require(false, "the machine stalled %v at %s, while RPC %s (sent %s) waited for its %v deadline",
				st.Duration, trace.FormatT(st.T), id, trace.FormatT(start), switchDeadline)
		}
	}
}
