// Package mutate derives known-bad traces from good ones: a Mutation changes
// one thing an implementation did in a trace (a connection attempt moved in
// time, a channel state inserted, an RPC answered by another backend, a NACK
// turned into an ACK) and leaves the rest, the harness's stimuli above all,
// as it was. A check that passes on a golden trace and fails on a mutation of
// it is shown to be able to fail (DESIGN.md, "How a verdict is reached").
//
// Mutations come in families (Families), each a function on a trace with a
// name and a one-line description; Candidates lists every instance of every
// family a given trace offers, in the families' order, each named by an ID
// that names it again on the same trace ("shift-attempt[2,+40ms]"). Applying
// one gives a new trace, in time order, that trace.Canonical writes and
// trace.Read reads back: a mutation changes behaviour, never the format,
// and never the harness's stimuli (IsStimulus).
package mutate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Family is one kind of mutation: a function on traces with a name and a
// one-line description.
type Family struct {
	Name        string // "shift-attempt"
	Description string // one line: what it changes
	candidates  func(tr *trace.Trace) []Mutation
}

// Mutation is one instance of a family on one trace.
type Mutation struct {
	ID          string // the family's name and the instance's parameters: "shift-attempt[2,+40ms]"
	Family      string // the family's name
	Description string // one line, with the trace's own values: "moves the 2nd connection attempt (…) 40ms later"
	edit        func(evs []trace.Event) []trace.Event
}

// Apply returns a new trace: tr with m's change, its events in time order
// (a stable sort, so that events at one time keep their order). The header
// is tr's (its scenario shared). It fails when the change would put an event
// before the start of the run.
func (m Mutation) Apply(tr *trace.Trace) (*trace.Trace, error) {
	evs := m.edit(cloneEvents(tr.Events))
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].T < evs[j].T })
	for _, e := range evs {
		if e.T < 0 {
			return nil, fmt.Errorf("%s: an event would come before the start of the run (%s)", m.ID, e.String())
		}
	}
	return &trace.Trace{Header: tr.Header, Events: evs}, nil
}

// Families are the mutation families, most specific first: connection
// attempts, channel states, re-resolution, xDS answers, RPC results, what
// a client's xDS resolver gave its channel, then the edits of one event of
// the policy, the capture or a backend; last, the blunt ones that change
// every pass over every list at once (passes.go), which statistical checks
// over many lists need and others should reach only through a hint.
func Families() []Family {
	return []Family{
		shiftAttempt, dropAttempt, swapAttempts, retargetAttempt, repeatAttempt, addAttempt,
		insertState, dropState, replaceState, shiftState, hurryState, dropChannelState,
		dropResolveNow, shiftResolveNow, addResolveNow, repeatResolveNow, resolveDNSAgain,
		nackToACK, ackToNACK, nackNewVersion, nackClearErr, dropXDS,
		serveOn, repick, failRPC, succeedRPC, delayResult, hurryResult, setCode, clearErr, dropErrAddress,
		swapAddrs,
		splitEndpoint, reverseEndpoint, staleUpdate, reversePriorities, renamePolicy, swapPolicies, widenSubchannel,
		watchHealth,
		timerStopToFire, timerFireToStop, timerDuration,
		shiftEvent, dropEvent, copyEvent,
		unshuffle, dropAllAttempts, splitEvenly, pinBackend,
	}
}

// Family returns the family named name.
func FamilyNamed(name string) (Family, bool) {
	for _, f := range Families() {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// Candidates lists every mutation the families offer on tr, in the order of
// Families and, within a family, of the trace. IDs are unique.
func Candidates(tr *trace.Trace) []Mutation {
	var out []Mutation
	for _, f := range Families() {
		for _, m := range f.candidates(tr) {
			m.Family = f.Name
			out = append(out, m)
		}
	}
	return out
}

// ByID returns the candidate of tr named id. Only the family id names
// (every ID begins with its family's name and "[") makes candidates: a
// long trace offers tens of thousands.
func ByID(tr *trace.Trace, id string) (Mutation, bool) {
	name, _, _ := strings.Cut(id, "[")
	f, ok := FamilyNamed(name)
	if !ok {
		return Mutation{}, false
	}
	for _, m := range f.candidates(tr) {
		if m.ID == id {
			m.Family = f.Name
			return m, true
		}
	}
	return Mutation{}, false
}

// cloneEvents copies evs deeply: a mutation never changes the trace it was
// given.
func cloneEvents(evs []trace.Event) []trace.Event {
	out := make([]trace.Event, len(evs))
	for i, e := range evs {
		e.Addrs = slices.Clone(e.Addrs)
		e.SessionAddrs = slices.Clone(e.SessionAddrs)
		e.Names = slices.Clone(e.Names)
		if e.Endpoints != nil {
			eps := make([][]string, len(e.Endpoints))
			for j, ep := range e.Endpoints {
				eps[j] = slices.Clone(ep)
			}
			e.Endpoints = eps
		}
		out[i] = e
	}
	return out
}

// remove returns evs without the events at the indices in drop.
func remove(evs []trace.Event, drop []int) []trace.Event {
	gone := map[int]bool{}
	for _, i := range drop {
		gone[i] = true
	}
	out := evs[:0:0]
	for i, e := range evs {
		if !gone[i] {
			out = append(out, e)
		}
	}
	return out
}

// insertAfter returns evs with e inserted right after index i (before
// everything when i < 0). Apply's stable sort then puts it in time order.
func insertAfter(evs []trace.Event, i int, e trace.Event) []trace.Event {
	out := make([]trace.Event, 0, len(evs)+1)
	out = append(out, evs[:i+1]...)
	out = append(out, e)
	return append(out, evs[i+1:]...)
}

// ordinal spells n (1-based) as "1st", "2nd", …
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// signed renders a duration with its sign: "+40ms", "-40ms".
func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// later says how d moves an event: "40ms later", "40ms earlier".
func later(d time.Duration) string {
	if d < 0 {
		return (-d).String() + " earlier"
	}
	return d.String() + " later"
}

// at renders an event's time for a description.
func at(t time.Duration) string { return "at " + trace.FormatT(t) }

// indicesOf lists the indices of the events of evs for which keep holds.
func indicesOf(evs []trace.Event, keep func(trace.Event) bool) []int {
	var out []int
	for i, e := range evs {
		if keep(e) {
			out = append(out, i)
		}
	}
	return out
}

// hasPolicy reports whether evs hold the policy's own events.
func hasPolicy(evs []trace.Event) bool {
	return slices.ContainsFunc(evs, func(e trace.Event) bool { return e.Source == trace.SourcePolicy })
}

// shifts are the time offsets the shifting families try, smallest first: a
// check that tolerates none of them is tight.
var shifts = []time.Duration{40 * time.Millisecond, -40 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond}
