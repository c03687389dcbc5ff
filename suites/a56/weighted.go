package a56

import (
	"fmt"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/internal/uniform"
	"github.com/conformlab/conform/suites/spec"
)

// Weighted spread: weighted_target_experimental routes picks to its
// children in proportion to their weights (A56, Background; A28 makes the
// choice random per pick). Through xDS, a priority's localities are its
// children, weighted by their load_balancing_weight: eds1's one priority
// has locality z1 of weight 1 ([b1]) and z2 of weight 3 ([b2]), so each RPC
// goes to b1 with probability 1/4, independently. The share of b1 among
// weightedSamples RPCs is judged by an exact two-sided binomial test
// (suites/internal/uniform) at a false-fail probability of at most
// weightedAlpha. The RPCs judged are the first weightedSamples sent after
// both backends accepted a connection; their results are the trace's
// rpc-result events, so a verdict is repeatable from the trace, and the
// simulator's sample is its seed's. A check is never retried until it
// passes.
const (
	weightedAlpha = 1e-6
	// weightedSamples: at 400 the test's false-fail probability is 7.9e-7,
	// and a client that ignores the weights (share 1/2) passes it with
	// probability 1.2e-8 (TestWeightedTest_RejectsEqualSplit).
	weightedSamples = 400
	weightedRPCs    = 440 // the rest to spare for RPCs sent before both connected
	weightedShare   = 0.25
	weightedFirst   = 500 * time.Millisecond // the first RPC: the xDS resources have arrived
	weightedPeriod  = 5 * time.Millisecond
)

// weightedTest is the binomial test of the spec's b1 share.
var weightedTest = uniform.MustNewBinomial(weightedSamples, weightedShare, weightedAlpha)

func weightedIDs() []string {
	out := make([]string, weightedRPCs)
	for i := range out {
		out[i] = fmt.Sprintf("w%03d", i+1)
	}
	return out
}

// localityWeights: eds1 (round_robin) with localities z1 (weight 1, [b1])
// and z2 (weight 3, [b2]); weightedRPCs RPCs, one every 5 ms.
func localityWeights() spec.Spec {
	la := xds.LoadAssignment{Cluster: edsCluster, Priorities: []xds.Priority{{Localities: []xds.Locality{
		{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{{Addr: "b1/ipv4"}}},
		{Name: "z2", Weight: 3, Endpoints: []xds.Endpoint{{Addr: "b2/ipv4"}}},
	}}}}
	b := scenario.New("eds-locality-weights").
		Describe(fmt.Sprintf("eds1 (round_robin): one priority, locality z1 weight 1 [b1], z2 weight 3 [b2]; %d RPCs, one every %v from %v", weightedRPCs, weightedPeriod, weightedFirst)).
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(edsResources(la)))
	for i, id := range weightedIDs() {
		b.At(weightedFirst+time.Duration(i)*weightedPeriod, scenario.RPC(id, scenario.WaitForReady(), scenario.Deadline(5*time.Second)))
	}
	s := b.After(scenario.On("rpc-result").Times(weightedRPCs), scenario.Finish()).
		End(weightedFirst + weightedRPCs*weightedPeriod + 5*time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A56, Section: "Background",
		Labels:   []string{spec.LabelXDS},
		Scenario: s,
		Checks: []spec.Check{{Requirement: "A56-WEIGHTED-TARGET-SPLIT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			hits, n := weightedSample(g, tr)
			verdict.Require(n == weightedSamples, "only %d RPCs were sent after both backends accepted a connection, fewer than the %d the test judges", n, weightedSamples)
			g.Expect(weightedTest.Passes(hits)).To(gomega.BeTrue(),
				"b1 (locality weight 1 of 4) answered %d of %d RPCs; %v", hits, n, weightedTest)
		}}},
		// The sample is each mode's own: the runs agree on the xDS
		// exchange, not on which backend answered.
		Agreement: &compare.Options{Select: []trace.Pred{trace.OfKind(trace.KindXDSRequest)}, Tolerance: edsSlack, Ignore: []string{"backend"}},
	}
}

// weightedSample counts, among the first weightedSamples RPCs sent after
// both b1 and b2 accepted a connection, those b1 answered; n is how many
// were counted. Every counted RPC must have succeeded.
func weightedSample(g gomega.Gomega, tr *trace.Trace) (hits, n int) {
	var up time.Duration
	for _, a := range []scenario.Addr{"b1/ipv4", "b2/ipv4"} {
		addr := spec.Addr(tr, a)
		evs := trace.Select(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindSYNACK && e.Addr == addr })
		verdict.Require(len(evs) > 0, "%s never accepted a connection: the split between the localities cannot be seen", a)
		up = max(up, evs[0].T)
	}
	for _, id := range weightedIDs() {
		if n == weightedSamples {
			break
		}
		if spec.RPCStart(g, tr, id) <= up {
			continue
		}
		r := spec.RPCResult(g, tr, id)
		g.Expect(r.Code).To(gomega.Equal("OK"), "RPC %s: both localities are READY", id)
		if r.Backend == "b1" {
			hits++
		}
		n++
	}
	return hits, n
}
