package monitor

import (
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// The Happy Eyeballs monitors: A61, Happy Eyeballs in the pick_first LB
// Policy, and Address List Handling in pick_first, on the first pass of a
// pick_first that is the client's root policy.

// firstAttempts is the evidence the first-pass monitors read.
var firstAttempts = []trace.Evidence{trace.EvidencePackets, trace.EvidenceResolver, trace.EvidenceConfig}

// passApplies says why a rule about the first pass's attempts does not
// apply to tr: not pick_first, or fewer than two attempts in the pass.
func passApplies(tr *trace.Trace) string {
	if why := pickFirstApplies(tr); why != "" {
		return why
	}
	p, why := passOf(tr)
	if why != "" {
		return "not exercised: " + why
	}
	if len(p.attempts) < 2 {
		return fmt.Sprintf("not exercised: the first pass made %d connection attempt(s) to the %d address(es) it was given: no gap between two", len(p.attempts), len(p.addrs))
	}
	return ""
}

// HEAttemptDelay: between two attempts of the first pass, the Connection
// Attempt Delay (250 ms unconfigured), unless the earlier one failed first.
var HEAttemptDelay = Monitor{
	Name:        "he-attempt-delay",
	Requirement: "A61-HE-DELAY-DEFAULT",
	Invariant:   "in pick_first's first pass, an attempt that has not failed is followed by the next one 250 ms (the Connection Attempt Delay) after it started",
	Needs:       firstAttempts,
	Applies: func(tr *trace.Trace) string {
		if _, set := connectionAttemptDelay(tr); set {
			return "the config sets the Connection Attempt Delay: A61-HE-DELAY-CLAMP's rule, not the default's"
		}
		if why := passApplies(tr); why != "" {
			return why
		}
		if len(timerGaps(tr)) == 0 {
			return "not exercised: every attempt of the first pass but the last failed before its Connection Attempt Delay was over"
		}
		return ""
	},
	Unexercised: noHappyEyeballs,
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		p, _ := passOf(tr)
		b := breaches{rule: "each attempt of the first pass that has not failed should be followed by the next 250 ms after it started (±" + spec.TimerWithin(tr).String() + ")"}
		var s skipped
		for _, k := range timerGaps(tr) {
			a, next := p.attempts[k], p.attempts[k+1]
			s.try(func() {
				if k == 0 {
					spec.RequirePromptFirstAttempt(tr)
				}
				spec.RequireSteadyMachine(tr, a.T, next.T, "250 ms Connection Attempt Delay")
				if c := answeredBy(tr, a, next.T); c >= 0 && next.T-a.T < defaultDelay-spec.TimerWithin(tr) && !spec.HasPolicy(tr) {
					verdict.Require(false, "the attempt to %s connected at %s and the next came early: a failure after connecting (the handshake) is not seen from outside", a.Addr, trace.FormatT(c))
				}
			}, func() {
				if gap := next.T - a.T; gap < defaultDelay-spec.TimerWithin(tr) || gap > defaultDelay+spec.TimerWithin(tr) {
					b.addEvents([]trace.Event{a, next}, "at %s: %v between the attempts to %s and %s", trace.FormatT(next.T), gap.Round(100*time.Microsecond), a.Addr, next.Addr)
				}
			})
		}
		s.require()
		b.judge(g)
	},
}

// noHappyEyeballs says why a first pass over two addresses or more made
// one attempt only: the client kept to it, unanswered and not failed, for
// a Connection Attempt Delay and more, and never tried the next address.
// No Happy Eyeballs: A61-HE-FIRST-PASS, A61-HE-TIMER-NEXT-ADDRESS and
// A61-HE-NOT-GATED judge that; the delay has no value to judge ("" when
// the pass shows something else).
func noHappyEyeballs(tr *trace.Trace) string {
	p, why := passOf(tr)
	if why != "" || len(p.addrs) < 2 || len(p.attempts) != 1 {
		return ""
	}
	a := p.attempts[0]
	room := defaultDelay + spec.TimerWithin(tr)
	if answeredBy(tr, a, a.T+room) >= 0 || failedBy(tr, a, a.T+room) >= 0 || p.to-a.T < room {
		return ""
	}
	return fmt.Sprintf("Happy Eyeballs did not run: the attempt to %s at %s was pending for %v and more, and none of the first pass's %d other address(es) was tried (A61-HE-FIRST-PASS, A61-HE-TIMER-NEXT-ADDRESS and A61-HE-NOT-GATED judge that)",
		a.Addr, trace.FormatT(a.T), room, len(p.addrs)-1)
}

// timerGaps are the places k in the first pass's attempts where the
// attempt had not failed when the next one came, before its Connection
// Attempt Delay was over: the gaps the delay makes (an early failure moves
// the pass on instead, HEFailureNextAddress's rule).
func timerGaps(tr *trace.Trace) []int {
	p, _ := passOf(tr)
	var out []int
	for k := 0; k+1 < len(p.attempts); k++ {
		a, next := p.attempts[k], p.attempts[k+1]
		if f := failedBy(tr, a, a.T+defaultDelay); f < 0 || f > next.T {
			out = append(out, k)
		}
	}
	return out
}

// failureAtOnce bounds how long after an attempt's failure the next
// attempt of the pass may start: less than the shortest Connection Attempt
// Delay a config can set (100 ms, A61), so that no timer explains it.
const failureAtOnce = 100 * time.Millisecond

// HEFailureNextAddress: an attempt of the first pass that fails before its
// timer fires moves the pass on to the next address at once.
var HEFailureNextAddress = Monitor{
	Name:        "he-failure-next-address",
	Requirement: "A61-HE-FAILURE-NEXT-ADDRESS",
	Invariant:   "in pick_first's first pass, an attempt that fails before the Connection Attempt Delay is followed by the next address's attempt at once",
	Needs:       firstAttempts,
	Applies: func(tr *trace.Trace) string {
		if why := passApplies(tr); why != "" {
			return why
		}
		if len(earlyFailures(tr)) == 0 {
			return "not exercised: no attempt of the first pass failed before its Connection Attempt Delay was over with another attempt after it"
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		b := breaches{rule: fmt.Sprintf("an attempt of the first pass that fails before its Connection Attempt Delay should be followed by the next address's attempt at once (within %v)", failureAtOnce)}
		for _, ef := range earlyFailures(tr) {
			if wait := ef.next.T - ef.failed; wait > failureAtOnce {
				b.addEvents([]trace.Event{ef.attempt, ef.next}, "the attempt to %s failed at %s; the next attempt came %v later", ef.attempt.Addr, trace.FormatT(ef.failed), wait.Round(100*time.Microsecond))
			}
		}
		b.judge(g)
	},
}

// earlyFailure is an attempt of the first pass that failed before its
// Connection Attempt Delay was over, and the attempt after it.
type earlyFailure struct {
	attempt, next trace.Event
	failed        time.Duration
}

func earlyFailures(tr *trace.Trace) []earlyFailure {
	p, _ := passOf(tr)
	delay, _ := connectionAttemptDelay(tr)
	var out []earlyFailure
	for k := 0; k+1 < len(p.attempts); k++ {
		a, next := p.attempts[k], p.attempts[k+1]
		if f := failedBy(tr, a, a.T+delay); f >= 0 && f <= next.T {
			out = append(out, earlyFailure{a, next, f})
		}
	}
	return out
}

// HEInterleave: the first pass's attempts alternate address families.
var HEInterleave = Monitor{
	Name:        "he-interleave",
	Requirement: "A61-ADDR-INTERLEAVE",
	Invariant:   "pick_first's first pass attempts the addresses interleaved by family (RFC 8305 section 4), from the first address's family, until one family runs out",
	Needs:       firstAttempts,
	Applies: func(tr *trace.Trace) string {
		if why := passApplies(tr); why != "" {
			return why
		}
		p, _ := passOf(tr)
		if !slices.ContainsFunc(p.addrs, spec.IsV6) || slices.IndexFunc(p.addrs, func(a string) bool { return !spec.IsV6(a) }) < 0 {
			return "not exercised: the address list has one family only"
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		p, _ := passOf(tr)
		b := breaches{}
		if spec.ResolvesThroughDNS(tr) || shuffles(tr) {
			// The order within each family is the resolver's or the
			// shuffle's: only the alternation of families is known.
			b.rule = "the first pass's attempts should alternate address families until one runs out"
			want := familyPattern(p.addrs, spec.IsV6(p.attempts[0].Addr))
			for k, a := range p.attempts {
				if spec.IsV6(a.Addr) != want[k] {
					b.addEvents(p.attempts[:k+1], "attempt %d went to %s, of the family of the attempt before it", k+1, family(a.Addr))
					break
				}
			}
		} else {
			want := spec.Interleave(p.addrs)
			b.rule = fmt.Sprintf("the first pass should attempt %v in that order: the list it was given, interleaved by family", want)
			for k, a := range p.attempts {
				if a.Addr != want[k] {
					b.addEvents(p.attempts[:k+1], "attempt %d went to %s, not %s", k+1, a.Addr, want[k])
					break
				}
			}
		}
		b.judge(g)
	},
}

// familyPattern is whether each place of the interleaving of addrs is
// IPv6, starting with IPv6 when v6First.
func familyPattern(addrs []string, v6First bool) []bool {
	var n6, n4 int
	for _, a := range addrs {
		if spec.IsV6(a) {
			n6++
		} else {
			n4++
		}
	}
	out := make([]bool, 0, len(addrs))
	for v6 := v6First; n6+n4 > 0; v6 = !v6 {
		switch {
		case v6 && n6 > 0:
			out, n6 = append(out, true), n6-1
		case !v6 && n4 > 0:
			out, n4 = append(out, false), n4-1
		}
	}
	return out
}

func family(addr string) string {
	if spec.IsV6(addr) {
		return "IPv6"
	}
	return "IPv4"
}

// HENoTFDuringPass: TRANSIENT_FAILURE only once every address of the list
// has failed since the pass began.
var HENoTFDuringPass = Monitor{
	Name:        "he-no-tf-during-pass",
	Requirement: "A61-HE-NO-TF-DURING-PASS",
	Invariant:   "pick_first reports TRANSIENT_FAILURE only after every address of its list has failed once since its pass began",
	Needs:       []trace.Evidence{trace.EvidenceChannelState, trace.EvidenceResolver, trace.EvidencePackets, trace.EvidenceConfig},
	Applies: func(tr *trace.Trace) string {
		if why := pickFirstApplies(tr); why != "" {
			return why
		}
		if len(intoTF(tr)) == 0 {
			return "not exercised: the channel never went into TRANSIENT_FAILURE after a pass over a list of addresses"
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		b := breaches{rule: "TRANSIENT_FAILURE should come only once every address of the list has failed since the pass began"}
		var s skipped
		for _, tf := range intoTF(tr) {
			var unfailed []string
			s.try(func() {
				unfailed = notFailed(tr, tf)
			}, func() {
				if len(unfailed) > 0 {
					b.addEvents([]trace.Event{tf.state}, "TRANSIENT_FAILURE at %s, the pass having begun at %s, before %v had failed",
						trace.FormatT(tf.state.T), trace.FormatT(tf.from), unfailed)
				}
			})
		}
		s.require()
		b.judge(g)
	},
}

// passTF is a change of the channel into TRANSIENT_FAILURE at the end of a
// pass over a list.
type passTF struct {
	state trace.Event // the state report
	from  time.Duration
	addrs []string
}

// intoTF are the channel's changes into TRANSIENT_FAILURE that end a pass:
// after a list that is not empty, with no resolver error since the pass
// began at the list or at the channel's last report of IDLE or READY.
func intoTF(tr *trace.Trace) []passTF {
	var out []passTF
	states := spec.ChannelStates(tr)
	for i, e := range states {
		if e.State != "TRANSIENT_FAILURE" || (i > 0 && states[i-1].State == "TRANSIENT_FAILURE") {
			continue
		}
		ups := trace.Select(spec.ResolverUpdates(tr), func(u trace.Event) bool { return u.T <= e.T })
		if len(ups) == 0 || len(spec.Flatten(ups[len(ups)-1])) == 0 {
			continue // no list, or an empty one: the resolver's TRANSIENT_FAILURE
		}
		from := ups[0].T
		for _, before := range states[:i] {
			if before.State == "IDLE" || before.State == "READY" {
				from = max(from, before.T)
			}
		}
		if len(trace.Select(spec.Of(tr, trace.KindResolverError), func(x trace.Event) bool { return x.T >= from && x.T <= e.T })) > 0 {
			continue
		}
		out = append(out, passTF{state: e, from: from, addrs: spec.Flatten(ups[len(ups)-1])})
	}
	return out
}

// notFailed are the addresses of tf's list that were never attempted
// since the pass began, and did not fail: its preconditions make it
// inconclusive where an address was attempted and its failure cannot be
// seen (an attempt that hung, or connected and failed after: only the
// policy's events show those failures), or where the client's list is not
// known (a client that resolves through DNS).
func notFailed(tr *trace.Trace, tf passTF) []string {
	var out []string
	for _, a := range tf.addrs {
		if slices.ContainsFunc(spec.ConnectionFailures(tr, a), func(t time.Duration) bool { return t >= tf.from && t <= tf.state.T }) {
			continue
		}
		tried := spec.AttemptsTo(trace.Window(tr.Events, tf.from, tf.state.T+1), a)
		if spec.HasPolicy(tr) && len(tried) > 0 {
			out = append(out, a) // its subchannel never reported the failure
			continue
		}
		verdict.Require(len(tried) == 0, "the attempt to %s at %s shows no failure before TRANSIENT_FAILURE at %s: a timeout, or a failure after connecting, is not seen from outside",
			a, trace.FormatT(tried[0].T), trace.FormatT(tf.state.T))
		verdict.Require(!spec.ResolvesThroughDNS(tr), "%s was never attempted, and the client resolves names through DNS: which addresses its resolver gave pick_first is not known", a)
		out = append(out, a)
	}
	return out
}

// HEPassEndReResolve: a first pass in which every address failed ends
// with a re-resolution request: "At that point, we will request
// re-resolution" (A61, Happy Eyeballs in the pick_first LB Policy). The
// request answers the pass's end: it comes within the slack of a reaction
// at once (spec.ReactionWithin) of the end, the machine steady in between,
// and so before the client's next connection attempt (the next round; an
// attempt within that slack of the end, to a subchannel whose backoff was
// over, is "at that point" too, in either order).
var HEPassEndReResolve = Monitor{
	Name:        "he-pass-end-reresolve",
	Requirement: "A61-HE-PASS-END-RERESOLVE",
	Invariant:   "when every address of pick_first's first pass has failed, pick_first asks for re-resolution then, before it tries again",
	Needs:       []trace.Evidence{trace.EvidencePackets, trace.EvidenceResolver, trace.EvidenceConfig, trace.EvidenceChannelState},
	Applies: func(tr *trace.Trace) string {
		if why := pickFirstApplies(tr); why != "" {
			return why
		}
		if _, ok := failedPassEnd(tr); !ok {
			return "not exercised: the first pass did not see every address fail before it connected or another list arrived"
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		end, _ := failedPassEnd(tr)
		slack := spec.ReactionWithin(tr, 10*time.Millisecond)
		spec.RequireReResolutionVisible(tr)
		p, _ := passOf(tr)
		var quiet []time.Duration
		for _, a := range p.addrs {
			if f := firstFailure(tr, a, p.from); f < end {
				quiet = append(quiet, f)
			}
		}
		spec.RequireRequestsAttributable(tr, quiet, []time.Duration{end}, slack)
		rr := trace.Select(spec.ReResolutions(tr), func(e trace.Event) bool { return e.T >= p.from })
		after := trace.Select(rr, func(e trace.Event) bool { return e.T >= end })
		next, tried := spec.NextAttempt(tr.Events, end+slack, p.addrs...)
		b := breaches{rule: fmt.Sprintf("the first pass ended at %s with every address failed: re-resolution should be asked for then (within %v), before the next attempt", trace.FormatT(end), slack)}
		switch {
		case spec.HasPolicy(tr) && len(rr) > 0 && rr[0].T < end:
			b.addEvents(rr[:1], "the policy asked before the pass ended")
		case len(after) == 0:
			b.addEvents(rr, "no request after the pass ended; the requests after the list arrived")
		case tried && next.T <= after[0].T:
			b.addEvents([]trace.Event{next, after[0]}, "the client tried again before it asked")
		default:
			spec.RequireSteadyMachine(tr, end, after[0].T, "re-resolution at the end of the pass")
			if after[0].T-end > slack {
				b.addEvents(rr, "no request at the end of the pass; the requests after the list arrived")
			}
		}
		b.judge(g)
	},
}

// firstFailure is the first failure of an attempt to addr at or after
// from, or -1.
func firstFailure(tr *trace.Trace, addr string, from time.Duration) time.Duration {
	for _, t := range spec.ConnectionFailures(tr, addr) {
		if t >= from {
			return t
		}
	}
	return -1
}

// failedPassEnd is when tr's first pass ended with every address failed:
// the first failure of the last address to fail, before the channel was
// READY and before another list arrived.
func failedPassEnd(tr *trace.Trace) (time.Duration, bool) {
	p, why := passOf(tr)
	if why != "" {
		return 0, false
	}
	var end time.Duration
	for _, a := range p.addrs {
		f := firstFailure(tr, a, p.from)
		if f < 0 || f > p.to {
			return 0, false
		}
		end = max(end, f)
	}
	return end, true
}

// HEReResolvePerRound: after a failed first pass, while pick_first stays
// in TRANSIENT_FAILURE, each round of failures (as many as its addresses,
// counted across them) brings a re-resolution request of its own.
var HEReResolvePerRound = Monitor{
	Name:        "he-reresolve-per-round",
	Requirement: "A61-HE-AFTER-PASS-RERESOLVE-COUNT",
	Invariant:   "after a failed first pass, until READY, pick_first asks for re-resolution each time the count of connection failures reaches the number of its addresses",
	Needs:       []trace.Evidence{trace.EvidencePackets, trace.EvidenceResolver, trace.EvidenceConfig, trace.EvidenceChannelState},
	Applies: func(tr *trace.Trace) string {
		if why := pickFirstApplies(tr); why != "" {
			return why
		}
		end, ok := failedPassEnd(tr)
		if !ok {
			return "not exercised: the first pass did not see every address fail before it connected or another list arrived"
		}
		p, _ := passOf(tr)
		if len(spec.FailureCountReached(stickyPart(tr, end), end, len(p.addrs), p.addrs...)) == 0 {
			return fmt.Sprintf("not exercised: after the first pass, no round of %d failures came before READY or another list", len(p.addrs))
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		end, _ := failedPassEnd(tr)
		p, _ := passOf(tr)
		spec.ReResolvesPerRound(g, stickyPart(tr, end), end, len(p.addrs), 0, p.addrs...)
	},
}

// stickyPart is tr up to the end of the sticky TRANSIENT_FAILURE that
// follows a failed first pass ending at end: the channel's first READY
// after it, or the next address list, whichever comes first.
func stickyPart(tr *trace.Trace, end time.Duration) *trace.Trace {
	to := tr.Events[len(tr.Events)-1].T + 1
	for _, e := range spec.ChannelStates(tr) {
		if e.T > end && e.State == ready {
			to = e.T
			break
		}
	}
	for _, u := range spec.ResolverUpdates(tr) {
		if u.T > end && u.T < to {
			to = u.T
			break
		}
	}
	return &trace.Trace{Header: tr.Header, Events: trace.Window(tr.Events, 0, to)}
}
