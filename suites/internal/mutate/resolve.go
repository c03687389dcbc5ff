package mutate

import (
	"fmt"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Re-resolution requests: resolve-now events, the policy's (the reference)
// or the driver's (the channel's, any implementation).

func isResolveNow(e trace.Event) bool { return e.Kind == trace.KindResolveNow }

func describeResolveNow(evs []trace.Event, k, i int) string {
	return fmt.Sprintf("the %s re-resolution request (%s)", ordinal(k+1), at(evs[i].T))
}

var dropResolveNow = Family{
	Name:        "drop-resolve-now",
	Description: "removes one re-resolution request: the client did not ask",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isResolveNow) {
			out = append(out, Mutation{
				ID:          fmt.Sprintf("drop-resolve-now[%d]", k+1),
				Description: "removes " + describeResolveNow(evs, k, i),
				edit:        func(evs []trace.Event) []trace.Event { return remove(evs, []int{i}) },
			})
		}
		return out
	},
}

var shiftResolveNow = Family{
	Name:        "shift-resolve-now",
	Description: "moves one re-resolution request in time",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isResolveNow) {
			for _, d := range shifts {
				if evs[i].T+d < 0 {
					continue
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("shift-resolve-now[%d,%s]", k+1, signed(d)),
					Description: fmt.Sprintf("moves %s %s", describeResolveNow(evs, k, i), later(d)),
					edit: func(evs []trace.Event) []trace.Event {
						evs[i].T += d
						return evs
					},
				})
			}
		}
		return out
	},
}

// failures are the events that report a connection failing: the capture's
// RSTs and the subchannels' TRANSIENT_FAILURE.
func isFailure(e trace.Event) bool {
	return e.Kind == trace.KindRST || (e.Kind == trace.KindSubchannelState && e.State == "TRANSIENT_FAILURE")
}

// resolveNowLike is a new re-resolution request as the trace would record
// it: the policy's at the root when the trace has the policy's events, else
// the driver's.
func resolveNowLike(evs []trace.Event, t time.Duration) trace.Event {
	for _, e := range evs {
		if isResolveNow(e) {
			e.T = t
			return e
		}
	}
	src := trace.SourceDriver
	if hasPolicy(evs) {
		src = trace.SourcePolicy
	}
	return trace.Event{T: t, Source: src, Kind: trace.KindResolveNow}
}

var addResolveNow = Family{
	Name:        "add-resolve-now",
	Description: "adds a re-resolution request when a connection failed: a request the client should not have made",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isFailure) {
			e := resolveNowLike(evs, evs[i].T)
			out = append(out, Mutation{
				ID:          fmt.Sprintf("add-resolve-now[%d]", k+1),
				Description: fmt.Sprintf("adds a re-resolution request at the %s connection failure (%s)", ordinal(k+1), evs[i].String()),
				edit:        func(evs []trace.Event) []trace.Event { return insertAfter(evs, i, e) },
			})
		}
		return out
	},
}

var repeatResolveNow = Family{
	Name:        "repeat-resolve-now",
	Description: "asks for re-resolution twice where the client asked once",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isResolveNow) {
			out = append(out, Mutation{
				ID:          fmt.Sprintf("repeat-resolve-now[%d]", k+1),
				Description: fmt.Sprintf("repeats %s 1ms later", describeResolveNow(evs, k, i)),
				edit: func(evs []trace.Event) []trace.Event {
					e := evs[i]
					e.T += time.Millisecond
					return insertAfter(evs, i, e)
				},
			})
		}
		return out
	},
}

// DNS queries: the lab's DNS server saw the client resolve a name (a
// dns-query event, recorded by the harness but made by the client).

func isDNSQuery(e trace.Event) bool { return e.Kind == trace.KindDNSQuery }

var resolveDNSAgain = Family{
	Name:        "resolve-dns-again",
	Description: "has the client resolve a name again, through DNS, when a connection failed after its first resolution: a re-resolution request that got through",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		qs := indicesOf(evs, isDNSQuery)
		if len(qs) == 0 {
			return nil
		}
		first := evs[qs[0]]
		var out []Mutation
		for k, i := range indicesOf(evs, isFailure) {
			if evs[i].T <= first.T {
				continue
			}
			q := first
			q.T = evs[i].T
			out = append(out, Mutation{
				ID:          fmt.Sprintf("resolve-dns-again[%d]", k+1),
				Description: fmt.Sprintf("adds a DNS query (%s) at the %s connection failure (%s)", first.Detail, ordinal(k+1), evs[i].String()),
				edit:        func(evs []trace.Event) []trace.Event { return insertAfter(evs, i, q) },
			})
		}
		return out
	},
}
