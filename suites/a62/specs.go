// Package a62 is the suite for gRFC A62 (pick_first: sticky
// TRANSIENT_FAILURE and address order randomization), as specs the Ginkgo
// suite and `conform run` both execute.
//
// Files by section: background.go (a lost connection goes IDLE),
// sticky.go (Sticky Transient Failure; Use sticky-TF by default),
// shuffle.go and uniform.go (Enable random shuffling of address list: one
// pass, and the statistics of many, read by passes.go), xds.go (`pick_first`
// via xDS).
package a62

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// The document's section headings, as the catalogue spells them.
const (
	sectionBackground = "Background"
	sectionStickyTF   = "Sticky Transient Failure"
	sectionStickyDflt = "Use sticky-TF by default"
	sectionShuffle    = "Enable random shuffling of address list"
)

// labSlack is how far a lab time may stray from the simulated one, and
// what a reaction "at once" may take in the lab: wall time, a real kernel
// and a real channel. A backoff's wait is a timer's value and is judged
// with spec.TimerWithin (the lab's measured jitter) from below only, where
// spec.RequireSteadyForLeast holds.
const labSlack = 50 * time.Millisecond

// The connectivity states, as traces spell them.
const (
	idle       = "IDLE"
	connecting = "CONNECTING"
	ready      = "READY"
	tf         = "TRANSIENT_FAILURE"
)

// Specs are the A62 specs, in document order.
func Specs() []spec.Spec {
	return []spec.Spec{
		connectionLostIdle(),
		connectionLostBackendStopped(),
		tfPicksFailFast(),
		stickyTFPriority(),
		xdsAggregateUnreachableDNSFirst(),
		stickyTFUntilReady(),
		stickyTFReresolveEveryRound(),
		stickyTFNewList(),
		stickyTFNewListAllFail(),
		stickyTFIdleTimeout(),
		stickyTFIdleAfterRPC(),
		idleTimeoutDefault(),
		shuffleAbsentKeepsOrder(),
		shuffleFalseKeepsOrder(),
		shuffleRandomizesEndpoints(),
		shuffleOnUpdateOnly(),
		shuffleOffEveryList("shuffle-absent-every-list", `{}`, "no shuffleAddressList"),
		shuffleOffEveryList("shuffle-false-every-list", `{"shuffleAddressList": false}`, "shuffleAddressList false"),
		shuffleTrueOneList(),
		shuffleUniform(2),
		shuffleUniform(3),
		xdsPickFirstLocalities(),
		xdsPickFirstShuffle(),
		xdsShuffleUniform(),
	}
}

// agreement compares what both modes see at the balancer API and on the
// wire: subchannel and balancer states and the SYNs, lane by lane, before
// cut (the part of the run both modes must share; zero: all of it).
func agreement(tolerance, cut time.Duration) *compare.Options {
	sel := []trace.Pred{trace.OfKind(trace.KindSubchannelState, trace.KindBalancerState, trace.KindSYN)}
	if cut > 0 {
		sel = append(sel, func(e trace.Event) bool { return e.T < cut })
	}
	return &compare.Options{
		Select:    sel,
		Ignore:    []string{"peer", "backend"}, // only the lab knows who sent it and to whom
		Tolerance: tolerance,
	}
}

// first returns the first event of tr at or after from that satisfies
// every pred, leaving out what the channel reports on its own (spec.Channel);
// ok is false when there is none.
func first(tr *trace.Trace, from time.Duration, preds ...trace.Pred) (trace.Event, bool) {
	for _, e := range spec.Channel(tr) {
		if e.T >= from && all(e, preds) {
			return e, true
		}
	}
	return trace.Event{}, false
}

func all(e trace.Event, preds []trace.Pred) bool {
	for _, p := range preds {
		if !p(e) {
			return false
		}
	}
	return true
}

// mustFirst is first for events the check cannot do without.
func mustFirst(g gomega.Gomega, tr *trace.Trace, from time.Duration, what string, preds ...trace.Pred) trace.Event {
	e, ok := first(tr, from, preds...)
	g.Expect(ok).To(gomega.BeTrue(), "no %s at or after %s", what, trace.FormatT(from))
	return e
}

// attemptAddrs are the addresses of the fresh SYNs of evs, in order.
func attemptAddrs(evs []trace.Event) []string {
	var out []string
	for _, e := range spec.Attempts(evs) {
		out = append(out, e.Addr)
	}
	return out
}
