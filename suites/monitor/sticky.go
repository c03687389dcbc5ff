package monitor

import (
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/match"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// The sticky TRANSIENT_FAILURE monitors: A62, Sticky Transient Failure and
// Use sticky-TF by default.

const (
	transientFailure = "TRANSIENT_FAILURE"
	ready            = "READY"
)

// StickyTF: once in TRANSIENT_FAILURE, pick_first leaves it only for READY.
var StickyTF = Monitor{
	Name:        "sticky-tf",
	Requirement: "A62-STICKY-TF",
	Invariant:   "pick_first in TRANSIENT_FAILURE reports no state but READY next: never CONNECTING or IDLE",
	Needs:       []trace.Evidence{trace.EvidenceChannelState, trace.EvidenceConfig},
	Applies: func(tr *trace.Trace) string {
		if why := pickFirstApplies(tr); why != "" {
			return why
		}
		if !slices.ContainsFunc(stateReports(tr), func(e trace.Event) bool { return e.State == transientFailure }) {
			return "not exercised: the channel never reported TRANSIENT_FAILURE"
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		for _, part := range idlePeriods(tr) {
			if slices.ContainsFunc(part, func(e trace.Event) bool { return e.State == transientFailure }) {
				g.Expect(part).To(match.StayInTransientFailureUntilReady())
			}
		}
	},
}

// idlePeriods are the channel's states (spec.Channel) cut where the
// channel went IDLE, for a client configured with an idle timeout: A62,
// Use sticky-TF by default, makes the idle timeout the end of sticky
// TRANSIENT_FAILURE, and the next connection starts afresh (when the IDLE
// came is A62-STICKY-TF-IDLE-ENDS's to judge). Without an idle timeout, the
// states are one period.
func idlePeriods(tr *trace.Trace) [][]trace.Event {
	evs := spec.Channel(tr)
	if s := tr.Header.Scenario; s == nil || s.Client.IdleTimeout <= 0 {
		return [][]trace.Event{evs}
	}
	var out [][]trace.Event
	from := 0
	for i, e := range evs {
		if e.State == "IDLE" && i > from {
			out = append(out, evs[from:i])
			from = i
		}
	}
	return append(out, evs[from:])
}

// stateReports are the channel's states as match's state matchers read
// them from spec.Channel: the driver's channel-state events when the trace
// has any, else the root policy's balancer-state events.
func stateReports(tr *trace.Trace) []trace.Event {
	evs := spec.Channel(tr)
	if slices.ContainsFunc(evs, func(e trace.Event) bool { return e.Kind == trace.KindChannelState }) {
		return trace.Select(evs, trace.OfKind(trace.KindChannelState))
	}
	return spec.ChannelStates(tr)
}

// TFPicks: in TRANSIENT_FAILURE an RPC without wait_for_ready fails with
// UNAVAILABLE, and one with it waits.
var TFPicks = Monitor{
	Name:        "tf-picks",
	Requirement: "A62-TF-PICKS",
	Invariant:   "an RPC sent while pick_first is in TRANSIENT_FAILURE, which it does not leave before the RPC ends, fails with UNAVAILABLE without wait_for_ready and does not fail so with it",
	Needs:       []trace.Evidence{trace.EvidenceChannelState, trace.EvidenceRPCs, trace.EvidenceConfig},
	Applies: func(tr *trace.Trace) string {
		if why := pickFirstApplies(tr); why != "" {
			return why
		}
		if len(rpcsInTF(tr)) == 0 {
			return "not exercised: no RPC was sent and ended while the channel was in TRANSIENT_FAILURE"
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		verdict.Require(tr.Header.Env["driver.observes"] != "polling",
			"the driver polls the channel's state: its reports may lag the channel, so an RPC's place in TRANSIENT_FAILURE is not known")
		b := breaches{rule: "an RPC sent in TRANSIENT_FAILURE should fail with UNAVAILABLE without wait_for_ready, and wait with it"}
		for _, r := range rpcsInTF(tr) {
			switch {
			case !r.start.WaitForReady && r.result.Code != "UNAVAILABLE":
				b.addEvents([]trace.Event{r.start, r.result}, "%s, without wait_for_ready, ended %s", r.start.RPC, codeOf(r.result))
			case r.start.WaitForReady && r.result.Code == "UNAVAILABLE":
				b.addEvents([]trace.Event{r.start, r.result}, "%s, with wait_for_ready, failed while the channel was still in TRANSIENT_FAILURE", r.start.RPC)
			}
		}
		b.judge(g)
	},
}

func codeOf(e trace.Event) string {
	if e.Code == "" {
		return "OK"
	}
	return e.Code
}

// rpcInTF is an RPC sent while the channel was in TRANSIENT_FAILURE and
// ended before it reported another state.
type rpcInTF struct{ start, result trace.Event }

func rpcsInTF(tr *trace.Trace) []rpcInTF {
	states := spec.ChannelStates(tr)
	stateAt := func(t trace.Event) (string, int) {
		st, i := "", -1
		for k, e := range states {
			if e.T <= t.T {
				st, i = e.State, k
			}
		}
		return st, i
	}
	var out []rpcInTF
	for _, s := range spec.Of(tr, trace.KindRPCStart) {
		st, i := stateAt(s)
		if st != transientFailure {
			continue
		}
		res := trace.Select(spec.Of(tr, trace.KindRPCResult), func(e trace.Event) bool { return e.RPC == s.RPC && e.T >= s.T })
		if len(res) == 0 {
			continue
		}
		left := slices.ContainsFunc(states[i+1:], func(e trace.Event) bool { return e.T <= res[0].T && e.State != transientFailure })
		if !left {
			out = append(out, rpcInTF{s, res[0]})
		}
	}
	return out
}

// minFirstBackoff is the shortest first backoff of
// spec/related/connection-backoff.md (1 s - 20 %): no reconnection to an
// address comes sooner after the attempt before it.
const minFirstBackoff = 800 * time.Millisecond

// StickyTFBackoff: in sticky TRANSIENT_FAILURE the reconnections to an
// address wait out the connection backoff.
var StickyTFBackoff = Monitor{
	Name:        "sticky-tf-backoff",
	Requirement: "A62-STICKY-TF-RECONNECTS",
	Invariant:   "while pick_first is in TRANSIENT_FAILURE, a reconnection to an address comes no sooner than the shortest first backoff (0.8 s) after the attempt before it",
	Needs:       []trace.Evidence{trace.EvidencePackets, trace.EvidenceChannelState, trace.EvidenceResolver, trace.EvidenceConfig},
	Applies: func(tr *trace.Trace) string {
		if why := pickFirstApplies(tr); why != "" {
			return why
		}
		if len(reconnectionsInTF(tr)) == 0 {
			return "not exercised: no address was attempted twice, the second time while the channel was in TRANSIENT_FAILURE"
		}
		return ""
	},
	Unexercised: func(tr *trace.Trace) string {
		if n := len(reconnections(tr, func(time.Duration) bool { return true })); n > 0 {
			return fmt.Sprintf("the client reconnected %s, none while the channel was in TRANSIENT_FAILURE: it left TRANSIENT_FAILURE first (A62-STICKY-TF judges that)", plural(n, "time"))
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		tol := spec.TimerWithin(tr)
		b := breaches{rule: fmt.Sprintf("in TRANSIENT_FAILURE, a reconnection should wait at least %v (±%v) after the attempt before it to the same address", minFirstBackoff, tol)}
		var s skipped
		for _, pair := range reconnectionsInTF(tr) {
			before, again := pair[0], pair[1]
			s.try(func() {
				spec.RequireSteadyForLeast(tr, before.T, again.T, minFirstBackoff-tol, "backoff between two attempts to "+again.Addr)
			}, func() {
				if again.T-before.T < minFirstBackoff-tol {
					b.addEvents(pair[:], "%s was attempted again %v after the attempt before", again.Addr, (again.T - before.T).Round(time.Millisecond))
				}
			})
		}
		s.require()
		b.judge(g)
	},
}

// reconnectionsInTF are the pairs of consecutive attempts to one address
// of which the second came while the channel was in TRANSIENT_FAILURE,
// with no new address list between them (which may make a new
// subchannel for the address).
func reconnectionsInTF(tr *trace.Trace) [][2]trace.Event {
	states := spec.ChannelStates(tr)
	return reconnections(tr, func(t time.Duration) bool {
		st := ""
		for _, e := range states {
			if e.T < t {
				st = e.State
			}
		}
		return st == transientFailure
	})
}

// reconnections are the pairs of attempts to one address with no resolver
// update between them, the second one made when keep says.
func reconnections(tr *trace.Trace, keep func(time.Duration) bool) [][2]trace.Event {
	ups := spec.ResolverUpdates(tr)
	last := map[string]trace.Event{}
	var out [][2]trace.Event
	for _, a := range spec.Attempts(tr.Events) {
		before, ok := last[a.Addr]
		last[a.Addr] = a
		if !ok || !keep(a.T) || slices.ContainsFunc(ups, func(u trace.Event) bool { return u.T > before.T && u.T <= a.T }) {
			continue
		}
		out = append(out, [2]trace.Event{before, a})
	}
	return out
}
