// Package a56 is the suite for gRFC A56 (priority LB policy), as specs the Ginkgo suite
// and `conform run` both execute.
//
// # Routing endpoints to children
//
// A56's children get their addresses through hierarchical paths (A56,
// Hierarchical Addresses). A scenario gives an endpoint its path with the
// endpoint attribute "path": child names, outermost first, separated by "/":
//
//	scenario.EP("b1/ipv4").With("path", "p0")     // priority child p0
//	scenario.EP("b2/ipv4").With("path", "p1/l1")  // p1, then its child l1
//
// The runners hand the attribute to the reference as its hierarchy
// (reference.Endpoint); an endpoint without a path reaches no child.
//
// # Revisions
//
// Where the seed text of A56 and its latest revision (with A115) differ,
// there is one spec per revision, each checking its own catalogue entry; the
// priority config's "revision": "latest" (conform's extension) selects the
// latest behaviour in the reference. Specs checking requirements both
// revisions share run the seed behaviour (the default).
//
// # Config changes
//
// A scenario's config step replaces the LB config during the run, as a new
// service config from the resolver would; the children keep the resolver's
// last addresses. The specs of configchange.go use it for children moving,
// leaving and rejoining the config (A56-CONFIG-NAME-IS-IDENTITY,
// A56-REMOVED-CHILD-*, A56-READDED-CHILD-*).
//
// A56-CHILD-CACHE-ENV-REVERT is checked with the scenario's environment:
// GRPC_EXPERIMENTAL_ENABLE_PRIORITY_LB_CHILD_POLICY_CACHE=true in the
// client's env, which the runners give the reference's priority policy as
// its "childPolicyCache" option (envrevert.go).
package a56

import (
	"encoding/json"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// The document's sections, as the catalogue names them.
const (
	sectionConfig    = "LB Policy Configuration"
	sectionHier      = "Hierarchical Addresses"
	sectionLifetime  = "Child Lifetime Management"
	sectionTracking  = "Child Connectivity State Tracking"
	sectionUpdates   = "Configuration Updates"
	sectionAlgorithm = "Algorithm for Choosing a Priority"
)

// A56's timers.
const (
	failoverTimeout     = 10 * time.Second
	deactivationTimeout = 15 * time.Minute

	timerFailover     = "failover"
	timerDeactivation = "deactivation"
)

// labSlack is how far a lab time may stray where a check does not judge a
// timer's value (the failover timer's is judged with spec.TimerWithin, the
// lab's measured jitter, where spec.RequireSteadyMachine holds): a reaction
// "at once" to another event, times counted from the scenario's own
// schedule (which the harness keeps on wall time) and an RPC's result
// after a timer (its connection and call), and the simulator against the
// lab.
const labSlack = 50 * time.Millisecond

// Specs are the A56 specs, in document order.
func Specs() []spec.Spec {
	return []spec.Spec{
		// LB Policy Configuration
		prioritiesListOrder(),
		ignoreReresolution(),
		configNameIsIdentity(),
		// Hierarchical Addresses
		nestedPaths(),
		// Child Lifetime Management
		returnToHigherThenReactivate(),
		deactivatedDestroyedAfter15Min(),
		removedChildSeed(),
		removedChildLatest(),
		removedChildEnvRevert(),
		// Child Connectivity State Tracking
		failoverTimerDroppedPrimary(),
		repeatedConnectingSeed(),
		repeatedConnectingLatest(),
		timerFiresSeed(),
		timerFiresLatest(),
		connectingAfterTF(),
		// Configuration Updates
		addressUpdateForwarded(),
		updateChoosesOnce(),
		// Algorithm for Choosing a Priority
		emptyPriorities(),
		tfFailoverAtOnce(),
		// Through xDS: EDS priorities (eds.go)
		edsFailover(),
		edsRepeatedConnecting(),
		edsReturnAndRemove(),
		edsReturnAndRemoveCached(),
		edsIgnoreReresolution(),
		// Background: weighted_target's split, as locality weights (weighted.go)
		localityWeights(),
	}
}

// ---------------------------------------------------------------------------
// Configs.

// kid is one child of a priority config.
type kid struct {
	name   string
	policy map[string]any // one entry: policy name → its config
	ignore bool           // ignore_reresolution_requests
}

func pickFirst(name string) kid {
	return kid{name: name, policy: map[string]any{"pick_first": map[string]any{}}}
}

func roundRobin(name string) kid {
	return kid{name: name, policy: map[string]any{"round_robin": map[string]any{}}}
}

// weightedTarget is a child that is a weighted_target over pick_first
// targets of weight 1.
func weightedTarget(name string, targets ...string) kid {
	ts := map[string]any{}
	for _, t := range targets {
		ts[t] = map[string]any{"weight": 1, "childPolicy": []any{map[string]any{"pick_first": map[string]any{}}}}
	}
	return kid{name: name, policy: map[string]any{"weighted_target_experimental": map[string]any{"targets": ts}}}
}

// priorityConfig is a priority_experimental config over kids, highest
// priority first; revision "" is the seed (the reference's default).
func priorityConfig(revision string, kids ...kid) string {
	children := map[string]any{}
	prios := []string{}
	for _, k := range kids {
		c := map[string]any{"config": []any{k.policy}}
		if k.ignore {
			c["ignore_reresolution_requests"] = true
		}
		children[k.name] = c
		prios = append(prios, k.name)
	}
	cfg := map[string]any{"children": children, "priorities": prios}
	if revision != "" {
		cfg["revision"] = revision
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	return string(js)
}

// at routes an endpoint of one address to the child at path.
func at(a scenario.Addr, path string) scenario.Endpoint {
	return scenario.EP(a).With("path", path)
}

// ---------------------------------------------------------------------------
// Agreement: what the simulator and the lab both see.

// agreement compares the events of kinds both modes record, with capture
// noise (retransmissions, which the lab's kernel schedules its own way) left
// out, within tolerance. Connection-level events (SYNs, subchannel states,
// re-resolution requests) are compared only before retriesFrom (zero: the
// whole run): after a failure, a subchannel retries after a jittered backoff
// (1 s ± 20 % the first time), drawn by the simulator's seeded source and by
// grpc-go's own in the lab, so retries neither line up nor come in the same
// number by a given time.
//
// Left out of the comparison: peers and backend names (only the lab knows
// them), and errors: besides their wording, the simulator gives the IDLE that
// follows a lost connection an error ("connection lost") where grpc-go's
// subchannel reports none.
func agreement(retriesFrom, tolerance time.Duration, kinds ...trace.Kind) *compare.Options {
	sel := []trace.Pred{trace.OfKind(kinds...), func(e trace.Event) bool { return !e.Retransmit }}
	if retriesFrom > 0 {
		sel = append(sel, func(e trace.Event) bool { return e.T < retriesFrom || !connectionKinds[e.Kind] })
	}
	return &compare.Options{Select: sel, Ignore: []string{"peer", "backend", "err"}, Tolerance: tolerance}
}

var connectionKinds = map[trace.Kind]bool{
	trace.KindSYN: true, trace.KindSubchannelState: true, trace.KindResolveNow: true,
}

// lbKinds are the LB-level kinds both modes record.
var lbKinds = []trace.Kind{
	trace.KindSYN, trace.KindSubchannelNew, trace.KindSubchannelState, trace.KindBalancerState,
	trace.KindTimerStart, trace.KindTimerFire, trace.KindTimerStop, trace.KindRPCResult,
}

// ---------------------------------------------------------------------------
// Reading traces.

// timers are the timer events (start, fire, stop) of one purpose.
func timers(tr *trace.Trace, purpose string) []trace.Event {
	var out []trace.Event
	for _, e := range spec.Of(tr, trace.KindTimerStart, trace.KindTimerFire, trace.KindTimerStop) {
		if e.Timer == purpose {
			out = append(out, e)
		}
	}
	return out
}

// ofTimer narrows timer events to one kind.
func ofTimer(evs []trace.Event, k trace.Kind) []trace.Event {
	return trace.Select(evs, trace.OfKind(k))
}

// subchannelsFor are the subchannel-new events of the subchannels for a.
func subchannelsFor(tr *trace.Trace, a scenario.Addr) []trace.Event {
	return spec.SubchannelsOf(tr, spec.Addr(tr, a))
}

// firstSYN is the first (not retransmitted) SYN to a; the check fails if
// there is none.
func firstSYN(g gomega.Gomega, tr *trace.Trace, a scenario.Addr) trace.Event {
	syns := freshSYNs(tr, a)
	g.ExpectWithOffset(1, syns).NotTo(gomega.BeEmpty(), "no connection attempt to %s", a)
	return syns[0]
}

// balancerStates are the root policy's state reports.
func balancerStates(tr *trace.Trace) []trace.Event {
	var out []trace.Event
	for _, e := range spec.Of(tr, trace.KindBalancerState) {
		if e.Policy == "" {
			out = append(out, e)
		}
	}
	return out
}

// between are the events of evs with from <= T < to.
func between(evs []trace.Event, from, to time.Duration) []trace.Event {
	var out []trace.Event
	for _, e := range evs {
		if e.T >= from && e.T < to {
			out = append(out, e)
		}
	}
	return out
}

// stateAt is the last state the root policy reported at or before t, "" if
// none.
func stateAt(tr *trace.Trace, t time.Duration) string {
	st := ""
	for _, e := range balancerStates(tr) {
		if e.T > t {
			break
		}
		st = e.State
	}
	return st
}

// beAbout matches a duration within tolerance of want.
func beAbout(want, tolerance time.Duration) gomega.OmegaMatcher {
	return gomega.BeNumerically("~", want, tolerance)
}

// expectNone fails the check, showing them, when there are events.
func expectNone(g gomega.Gomega, evs []trace.Event, why string) {
	g.ExpectWithOffset(1, len(evs)).To(gomega.BeZero(), "%s; found:%s", why, spec.Render(evs))
}
