package spec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/match"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// The evidence a check reads, whoever produced the trace. The reference
// records its policy's own events (trace.SourcePolicy: subchannels, the
// root's balancer-state, its resolve-now requests, timers); a third party's
// trace has only what is seen from outside the policy: the capture, the
// backends, the harness's stimuli and the driver's channel-state,
// resolve-now and rpc-result. These helpers read the policy's events when
// the trace has them and the outside evidence otherwise, with the same
// meaning; a check whose requirement cannot be seen from outside declares
// Needs: []trace.Source{trace.SourcePolicy} instead.

// HasPolicy reports whether tr records the policy's own events.
func HasPolicy(tr *trace.Trace) bool {
	return slices.ContainsFunc(tr.Events, func(e trace.Event) bool { return e.Source == trace.SourcePolicy })
}

// ChannelStates are the states the policy drove the channel through, in
// time order: the root policy's balancer-state events when tr has the
// policy's events; otherwise the driver's channel-state events, without the
// channel's own initial IDLE (grpc-js and C-core report it, grpc-go does
// not) and the final SHUTDOWN (the run closing the channel).
func ChannelStates(tr *trace.Trace) []trace.Event {
	if HasPolicy(tr) {
		return trace.Select(tr.Events, trace.OfKind(trace.KindBalancerState), func(e trace.Event) bool { return e.Policy == "" })
	}
	return channelStates(tr)
}

// Channel is tr's events without what the channel reports on its own
// rather than from its policy: its initial IDLE (the first state it
// reports, if IDLE: every channel starts there; a client resolving through
// DNS is created after the first resolver update, and C-core reports it
// then) and the final SHUTDOWN. The state matchers of harness/match read it
// as they read a whole trace.
func Channel(tr *trace.Trace) []trace.Event {
	own := map[int]bool{}
	seenState := false
	for i, e := range tr.Events {
		if e.Kind != trace.KindChannelState {
			continue
		}
		switch {
		case !seenState && e.State == "IDLE":
			own[i] = true
		case e.State == "SHUTDOWN":
			own[i] = true
		}
		seenState = true
	}
	out := make([]trace.Event, 0, len(tr.Events))
	for i, e := range tr.Events {
		if !own[i] {
			out = append(out, e)
		}
	}
	return out
}

func channelStates(tr *trace.Trace) []trace.Event {
	return trace.Select(Channel(tr), trace.OfKind(trace.KindChannelState))
}

// StateIs selects the events of ChannelStates(tr) in state st.
func StateIs(tr *trace.Trace, st string) trace.Pred {
	if HasPolicy(tr) {
		return func(e trace.Event) bool { return e.Kind == trace.KindBalancerState && e.Policy == "" && e.State == st }
	}
	return func(e trace.Event) bool { return e.Kind == trace.KindChannelState && e.State == st }
}

// Attempts are the connection attempts among evs: the SYNs that are not
// retransmissions, as the capture sees them (the simulator models them),
// in time order.
func Attempts(evs []trace.Event) []trace.Event {
	return trace.Select(evs, func(e trace.Event) bool { return e.Kind == trace.KindSYN && !e.Retransmit })
}

// AttemptsTo are the connection attempts among evs to addr.
func AttemptsTo(evs []trace.Event, addr string) []trace.Event {
	return trace.Select(Attempts(evs), func(e trace.Event) bool { return e.Addr == addr })
}

// NextAttempt is the first connection attempt among evs after t to one of
// addrs (to any address when addrs is empty), or false.
func NextAttempt(evs []trace.Event, t time.Duration, addrs ...string) (trace.Event, bool) {
	for _, e := range Attempts(evs) {
		if e.T > t && (len(addrs) == 0 || slices.Contains(addrs, e.Addr)) {
			return e, true
		}
	}
	return trace.Event{}, false
}

// Refusals are the times the connection attempts to addr were refused, as
// the capture saw them (an RST answering a SYN). An attempt that hangs
// (dropped SYNs) is not seen to fail before its deadline.
func Refusals(tr *trace.Trace, addr string) []time.Duration {
	var out []time.Duration
	for _, e := range Of(tr, trace.KindRST) {
		if e.Addr == addr {
			out = append(out, e.T)
		}
	}
	return out
}

// FailureCountReached are the times the count of connection failures to
// addrs after `after` (every one when after is negative), seen from
// outside (Refusals, counted across the addresses, in time order), reached
// n, 2n, 3n, …: the times A61 (Happy Eyeballs in the pick_first LB Policy)
// has pick_first request re-resolution once its first pass is over, n being
// its number of subchannels ("when that number reaches the number of
// subchannels"). A last round short of n failures has no time.
func FailureCountReached(tr *trace.Trace, after time.Duration, n int, addrs ...string) []time.Duration {
	var fs []time.Duration
	for _, a := range addrs {
		for _, t := range Refusals(tr, a) {
			if t > after {
				fs = append(fs, t)
			}
		}
	}
	slices.Sort(fs)
	var out []time.Duration
	for k := n - 1; k < len(fs); k += n {
		out = append(out, fs[k])
	}
	return out
}

// ReResolutions are the re-resolution requests: the policy's resolve-now
// events when tr has the policy's events; otherwise the driver's, the
// channel's requests; for a client that resolves through DNS, its DNS
// queries after its first resolution (a query within DNSQueryBurst of the
// one before belongs to the same resolution: A and AAAA). The channel's
// requests may include requests the implementation's subchannels make on
// their own (grpc-go's do), so without the policy's events a check can
// require a request where the policy must make one, but not count them
// (RequireRequestsAttributable).
func ReResolutions(tr *trace.Trace) []trace.Event {
	if HasPolicy(tr) {
		return trace.Select(tr.Events, trace.OfKind(trace.KindResolveNow), trace.FromSource(trace.SourcePolicy))
	}
	if ResolvesThroughDNS(tr) {
		return dnsReResolutions(tr)
	}
	return trace.Select(tr.Events, trace.OfKind(trace.KindResolveNow), trace.FromSource(trace.SourceDriver))
}

// DNSQueryBurst bounds the gap between the queries of one resolution (A
// and AAAA, asked together).
const DNSQueryBurst = 50 * time.Millisecond

// dnsReResolutions are the first queries of each DNS resolution but the
// first.
func dnsReResolutions(tr *trace.Trace) []trace.Event {
	var out []trace.Event
	last := time.Duration(-1)
	for i, q := range Of(tr, trace.KindDNSQuery) {
		if i > 0 && q.T-last > DNSQueryBurst {
			out = append(out, q)
		}
		last = q.T
	}
	return out
}

// RequireReResolutionVisible states the precondition of a check that needs
// to see a client's re-resolution from outside. A client that resolves
// through DNS shows it only as new DNS queries, which its resolver may
// defer (C-core waits 30 s between resolutions by default): without a
// query after the first resolution, the run cannot tell a request that was
// never made from one the resolver deferred.
func RequireReResolutionVisible(tr *trace.Trace) {
	if HasPolicy(tr) || !ResolvesThroughDNS(tr) {
		return
	}
	verdict.Require(len(dnsReResolutions(tr)) > 0, "the client resolves names through DNS: a re-resolution request shows only as new DNS queries, which its resolver may defer (C-core: 30 s between resolutions by default), and none came")
}

// RequireRequestsAttributable states the precondition of a check that
// attributes a channel's re-resolution requests to its policy from outside:
// the channel asks for none after the failures in quiet, where the policy
// asks for nothing, beyond the requests that answer the failures in busy,
// where it must ask (each failure is answered by the first request within
// slack after it that no earlier failure took; the busy ones choose first,
// so that one request soon after two close failures counts for the one
// the policy answers). A channel that asks after every subchannel failure
// (grpc-go's subchannels do) answers the quiet ones too, whatever its
// policy does: the run cannot tell the policy's requests from the others.
func RequireRequestsAttributable(tr *trace.Trace, quiet, busy []time.Duration, slack time.Duration) {
	if HasPolicy(tr) {
		return
	}
	rr := ReResolutions(tr)
	taken := make([]bool, len(rr))
	take := func(t time.Duration) bool {
		for i, e := range rr {
			if !taken[i] && e.T >= t && e.T-t <= slack {
				taken[i] = true
				return true
			}
		}
		return false
	}
	for _, t := range busy {
		take(t)
	}
	for _, t := range quiet {
		verdict.Require(!take(t), "the channel asked for re-resolution after the failure at %s too, where the policy asks for none: its requests at failures cannot be told from the policy's", trace.FormatT(t))
	}
}

// NeedsPolicy is the Needs of a check that reads what only the policy's
// events show: its timers, its subchannels and which one it chose, a
// child policy's own state.
var NeedsPolicy = []trace.Source{trace.SourcePolicy}

// PicksOf are the pick events of RPC id. The simulator names the RPC of
// each pick; the lab's recorder names none, so there they are the picks
// between id's rpc-start and its rpc-result (for specs that have one RPC
// in flight at a time).
func PicksOf(tr *trace.Trace, id string) []trace.Event {
	picks := trace.Select(tr.Events, trace.OfKind(trace.KindPick))
	if slices.ContainsFunc(picks, func(e trace.Event) bool { return e.RPC != "" }) {
		return trace.Select(picks, func(e trace.Event) bool { return e.RPC == id })
	}
	var from, to time.Duration = -1, -1
	for _, e := range tr.Events {
		switch {
		case e.RPC != id:
		case e.Kind == trace.KindRPCStart && from < 0:
			from = e.T
		case e.Kind == trace.KindRPCResult:
			to = e.T
		}
	}
	if from < 0 || to < 0 {
		return nil
	}
	return trace.Select(picks, func(e trace.Event) bool { return e.T >= from && e.T <= to })
}

// ResolvesThroughDNS reports whether tr's client got its addresses from the
// lab's DNS, not from conform's resolver: its driver said it cannot host the
// resolver (harness/driver's "resolver" capability).
func ResolvesThroughDNS(tr *trace.Trace) bool {
	return slices.Contains(strings.Split(tr.Header.Env["driver.cannot"], ","), "resolver")
}

// dnsOrderReason is why an order check says nothing of a client that
// resolves through DNS.
const dnsOrderReason = "the client resolves names through DNS and may sort the addresses it receives itself (RFC 6724's destination address selection, as C-core does)"

// RequireScenarioOrder states the precondition of a check that judges the
// order of a client's attempts against the order the scenario's resolver
// update gave: the client received that order. A client that resolves
// through DNS may sort the addresses itself, so the order it received is
// not known: the check is inconclusive for it.
func RequireScenarioOrder(tr *trace.Trace) {
	verdict.Require(!ResolvesThroughDNS(tr), "%s: the order it received is not known, so its attempts' order cannot be judged against the scenario's", dnsOrderReason)
}

// RequireFirstAttempt states the precondition of a check that needs the
// client to try addr first, the scenario's first address: a client that
// resolves through DNS and tried another address first sorted them itself,
// and the run says nothing of the rule. For a client given the scenario's
// order by conform's resolver, trying another address first is the check's
// business, not a precondition.
func RequireFirstAttempt(tr *trace.Trace, addr string) {
	if !ResolvesThroughDNS(tr) {
		return
	}
	as := Attempts(tr.Events)
	verdict.Require(len(as) > 0 && as[0].Addr == addr, "%s: its first attempt went to %s, not to the scenario's first address %s", dnsOrderReason, firstAddr(as), addr)
}

func firstAddr(as []trace.Event) string {
	if len(as) == 0 {
		return "nowhere"
	}
	return as[0].Addr
}

// ExpectStateSequence asserts that the channel's states, consecutive
// duplicates collapsed, are exactly states (match.HaveStateSequence on
// Channel). Its precondition: every transition shows at the driver's
// granularity. A driver that polls the channel's state (hello's "observes":
// "polling"; grpcio has no callback per change) can miss a short-lived state:
// when what it saw is the expected sequence with states missing, in order,
// the check is inconclusive; any other difference is the check's to judge.
//
// A trace with the policy's own events (the reference's) is judged on the
// root policy's balancer-state events, the states the policy drove the
// channel through as it recorded them: the channel's watch beside it reads
// the state after it wakes, and missed a CONNECTING of under a millisecond
// once in a 20-run soak (connection-lost-idle), which the policy's own
// record never does.
func ExpectStateSequence(g gomega.Gomega, tr *trace.Trace, states []string, description ...any) {
	if HasPolicy(tr) {
		policyOnly := trace.Select(Channel(tr), func(e trace.Event) bool { return e.Kind != trace.KindChannelState })
		g.ExpectWithOffset(1, policyOnly).To(match.HaveStateSequence(states...), description...)
		return
	}
	requireNoMissedState(tr)
	if tr.Header.Env["driver.observes"] == "polling" {
		seen := slices.Compact(stateNames(ChannelStates(tr)))
		want := slices.Compact(slices.Clone(states))
		verdict.Require(slices.Equal(seen, want) || !isSubsequence(seen, want),
			"the driver polls the channel's state and can miss a short-lived one: it saw %v, the expected %v with states missing", seen, want)
	}
	g.ExpectWithOffset(1, Channel(tr)).To(match.HaveStateSequence(states...), description...)
}

// requireNoMissedState states that every change of the channel's state
// shows. A driver watches the channel (grpc-go's WaitForStateChange, then
// GetState) and reads the state after it woke on a change, so a state that
// passed before it read (a CONNECTING of a fraction of a millisecond) is
// missed, and the sequence it shows says nothing of the rule. Two reports
// show it: the same state twice in a row, or READY right after IDLE (a
// channel makes its connections in CONNECTING: grpc-go v1.59.0, v1.67.3
// and v1.74.3 through the Go driver showed IDLE then READY, 0.6 to 6.4 ms
// after the list, on health-none-configured).
func requireNoMissedState(tr *trace.Trace) {
	// Every state the driver reported, the channel's initial IDLE too
	// (ChannelStates leaves it out), and the channel's start before them.
	states := trace.Select(tr.Events, trace.OfKind(trace.KindChannelState), func(e trace.Event) bool { return e.State != "SHUTDOWN" })
	prev := trace.Event{State: "IDLE"}
	for i, e := range states {
		if i > 0 {
			verdict.Require(e.State != prev.State,
				"the driver reported %s twice in a row (%s, %s): it woke on a change and missed the state between",
				e.State, trace.FormatT(prev.T), trace.FormatT(e.T))
		}
		verdict.Require(prev.State != "IDLE" || e.State != "READY",
			"the driver reported READY at %s right after IDLE (%s): a channel connects in CONNECTING, so the driver woke on a change and missed that state",
			trace.FormatT(e.T), trace.FormatT(prev.T))
		prev = e
	}
}

func stateNames(evs []trace.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.State
	}
	return out
}

// isSubsequence reports whether sub is want with some elements left out.
func isSubsequence(sub, want []string) bool {
	i := 0
	for _, w := range want {
		if i < len(sub) && sub[i] == w {
			i++
		}
	}
	return i == len(sub)
}

// maxResolutionDeferral bounds how long a channel may hold a re-resolution
// request back: channels space resolutions with a backoff (grpc-js's
// resolving balancer defers a request made within its 1 s ±20 % backoff
// until the backoff ends).
const maxResolutionDeferral = 1200 * time.Millisecond

// ReResolvesPerRound checks, from outside the policy, A61's rule that
// pick_first asks for re-resolution each time the count of connection
// failures after the time after (refusals of addrs, counted across
// addresses) reaches n, its number of subchannels, and that the run gives
// at least rounds such rounds. Each round must be followed by a request of
// its own (one request cannot answer two rounds) by the end of the next
// round — what a driver sees is the channel's resolver being asked, which
// may defer the request (maxResolutionDeferral); the last round is checked
// only when the run went on for that long after it. Its preconditions: the
// requests are visible (RequireReResolutionVisible) and attributable to the
// policy (RequireRequestsAttributable: none after the failures that
// complete no round); and a round judged to lack its own request did not
// end while the channel may have been holding requests back to merge them
// (requireUnmerged).
func ReResolvesPerRound(g gomega.Gomega, tr *trace.Trace, after time.Duration, n, rounds int, addrs ...string) {
	ends := FailureCountReached(tr, after, n, addrs...)
	g.ExpectWithOffset(1, len(ends)).To(gomega.BeNumerically(">=", rounds), "the scenario should give %d rounds of %d failures", rounds, n)
	RequireReResolutionVisible(tr)
	var quiet []time.Duration
	for _, t := range FailureCountReached(tr, after, 1, addrs...) {
		if !slices.Contains(ends, t) {
			quiet = append(quiet, t)
		}
	}
	RequireRequestsAttributable(tr, quiet, ends, ReactionWithin(tr, 10*time.Millisecond))
	rr := ReResolutions(tr)
	last := tr.Events[len(tr.Events)-1].T
	used := 0 // the requests already credited to a round
	for i, end := range ends {
		by := last
		if i+1 < len(ends) {
			by = ends[i+1]
		} else if last-end < maxResolutionDeferral {
			return // the run ended before a deferred request would show
		}
		next := slices.IndexFunc(rr[used:], func(e trace.Event) bool { return e.T >= end })
		if next < 0 || rr[used+next].T > by {
			requireUnmerged(tr, rr, end, last, i+1)
		}
		g.ExpectWithOffset(1, next >= 0 && rr[used+next].T <= by).To(gomega.BeTrue(),
			"at %s: round %d of failures ended without a re-resolution of its own by %s; re-resolutions at %v",
			trace.FormatT(end), i+1, trace.FormatT(by), Times(rr))
		used += next + 1
	}
}

// requireUnmerged states the precondition of judging that round (its
// failures ending at end) went without a re-resolution request of its own:
// the channel was not backing off from resolving. A channel that spaces
// resolutions with a backoff holds a request made during it and makes one
// resolution when it ends, whatever the number of requests (grpc-js's
// resolving balancer: the requests of two rounds of failures 2 ms apart
// show as one resolution up to 1 s later). So when a request came less
// than maxResolutionDeferral before end, and another within
// maxResolutionDeferral after it (or the run ended before that), the
// round's request may be in it, merged with the next round's: the run does
// not tell one request per round from fewer.
func requireUnmerged(tr *trace.Trace, rr []trace.Event, end, last time.Duration, round int) {
	before := slices.IndexFunc(rr, func(e trace.Event) bool { return e.T < end && end-e.T < maxResolutionDeferral })
	if before < 0 {
		return
	}
	held := fmt.Sprintf("round %d of failures ended at %s, %v after the re-resolution at %s, while the channel may still have been backing off from resolving (up to %v)",
		round, trace.FormatT(end), (end - rr[before].T).Round(100*time.Microsecond), trace.FormatT(rr[before].T), maxResolutionDeferral)
	if after := slices.IndexFunc(rr, func(e trace.Event) bool { return e.T >= end && e.T-end <= maxResolutionDeferral }); after >= 0 {
		verdict.Require(false, "%s: the request at %s may answer this round and the next at once, merged by the channel", held, trace.FormatT(rr[after].T))
	}
	verdict.Require(last-end >= maxResolutionDeferral, "%s, and the run ended %v after it, before a request held that long would show", held, (last - end).Round(100*time.Microsecond))
}

// promptStart bounds how long after the first resolver update a client's
// first connection attempt may leave for the gap to its next attempt to
// measure its Connection Attempt Delay (grpc-js's first SYN leaves 16–51 ms
// after the list on a quiet machine).
const promptStart = 100 * time.Millisecond

// RequirePromptFirstAttempt states the precondition of a check that reads a
// client's timer from the gap between its first two attempts: the first
// attempt left soon after the first resolver update. A client that starts
// its timer when it schedules the connect (grpc-js does) and was stalled
// before the connect left sends its first SYN late, which shortens the gap
// without its timer being short.
func RequirePromptFirstAttempt(tr *trace.Trace) {
	ups, as := Of(tr, trace.KindResolverUpdate), Attempts(tr.Events)
	if len(ups) == 0 || len(as) == 0 {
		return // the check's own assertions say what is missing
	}
	verdict.Require(as[0].T-ups[0].T <= promptStart, "the client's first attempt left %s after the addresses arrived (more than %v): it was stalled, and the gap between its attempts does not measure its timer",
		trace.FormatT(as[0].T-ups[0].T), promptStart)
}
