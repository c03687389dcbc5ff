package mutate

import (
	"fmt"
	"slices"

	"github.com/conformlab/conform/harness/trace"
)

// Passes over whole lists: what a client did with every address list it was
// given, as the capture sees it. These families change every pass at once,
// the way a client's systematic misbehaviour would (it never shuffles, it
// never connects), which one changed attempt cannot show to a statistical
// check over many lists.

// lists are the address lists the trace's resolver updates gave the
// channel, in order, each as its endpoints' first addresses, without
// repeats: a list given again is the same list.
func lists(evs []trace.Event) [][]string {
	var out [][]string
	for _, e := range evs {
		if e.Kind != trace.KindResolverUpdate || len(e.Endpoints) == 0 {
			continue
		}
		var l []string
		for _, ep := range e.Endpoints {
			if len(ep) > 0 {
				l = append(l, ep[0])
			}
		}
		if !slices.ContainsFunc(out, func(o []string) bool { return slices.Equal(o, l) }) {
			out = append(out, l)
		}
	}
	return out
}

var unshuffle = Family{
	Name:        "unshuffle",
	Description: "puts every pass over a list in the list's own order: a client that never shuffles",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		as := attemptsOf(evs)
		// For each list with more than one endpoint: the first attempt to
		// each of its addresses, in time order, and the address the
		// attempt in that place would go to in the list's order.
		type move struct {
			members []int
			addr    string
		}
		var moves []move
		passes := 0
		for _, l := range lists(evs) {
			if len(l) < 2 {
				continue
			}
			var firsts []attempt
			seen := map[string]bool{}
			for _, a := range as {
				if addr := evs[a.syn].Addr; slices.Contains(l, addr) && !seen[addr] {
					seen[addr] = true
					firsts = append(firsts, a)
				}
			}
			if len(firsts) != len(l) {
				continue // an incomplete pass: it shows no order to undo
			}
			changed := false
			for k, a := range firsts {
				if evs[a.syn].Addr != l[k] {
					moves = append(moves, move{a.members, l[k]})
					changed = true
				}
			}
			if changed {
				passes++
			}
		}
		if passes == 0 {
			return nil
		}
		return []Mutation{{
			ID:          fmt.Sprintf("unshuffle[%d]", passes),
			Description: fmt.Sprintf("puts the %d passes that were shuffled in the order of their lists: every attempt of a pass keeps its time and answer, and goes to the address the list has in its place", passes),
			edit: func(evs []trace.Event) []trace.Event {
				for _, m := range moves {
					for _, i := range m.members {
						evs[i].Addr = m.addr
					}
				}
				return evs
			},
		}}
	},
}

var dropAllAttempts = Family{
	Name:        "drop-all-attempts",
	Description: "removes every connection attempt (their SYNs and what answered them): the client never tried to connect",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		as := attemptsOf(evs)
		if len(as) == 0 {
			return nil
		}
		var members []int
		for _, a := range as {
			members = append(members, a.members...)
		}
		return []Mutation{{
			ID:          fmt.Sprintf("drop-all-attempts[%d]", len(as)),
			Description: fmt.Sprintf("removes all %d connection attempts: the client never connected (it did not take its configuration, say)", len(as)),
			edit:        func(evs []trace.Event) []trace.Event { return remove(evs, members) },
		}}
	},
}
