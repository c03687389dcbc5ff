package mutate

import (
	"fmt"
	"slices"
	"sort"

	"github.com/conformlab/conform/harness/trace"
)

// Spreads: the blunt edits that change who answered every RPC at once,
// which a check of how a policy spreads RPCs over backends (a weighted
// split, round_robin's rotation) needs: one RPC moved never changes a
// share enough.

// okResults are the indices of the successful rpc-result events of evs.
func okResults(evs []trace.Event) []int {
	return indicesOf(evs, func(e trace.Event) bool { return isResult(e) && succeeded(e) && e.Backend != "" })
}

// answerBy has the RPC whose result is at index i answered by backend b.
func answerBy(evs []trace.Event, i int, b string) {
	for _, j := range servedOf(evs, i) {
		if a := addrOfBackend(evs, b, evs[j].Addr); a != "" {
			evs[j].Addr = a
		}
		evs[j].Backend = b
	}
	evs[i].Backend = b
}

// splitEvenly: every successful RPC answered in turn by the backends that
// answered any, as a client ignoring weights would spread them.
var splitEvenly = Family{
	Name:        "split-evenly",
	Description: "has the successful RPCs answered in turn by the backends that answered any (weights ignored)",
	candidates: func(tr *trace.Trace) []Mutation {
		ok := okResults(tr.Events)
		var bs []string
		for _, i := range ok {
			if b := tr.Events[i].Backend; !slices.Contains(bs, b) {
				bs = append(bs, b)
			}
		}
		if len(bs) < 2 {
			return nil
		}
		sort.Strings(bs)
		same := true
		for k, i := range ok {
			same = same && tr.Events[i].Backend == bs[k%len(bs)]
		}
		if same {
			return nil
		}
		return []Mutation{{
			ID:          fmt.Sprintf("split-evenly[%d]", len(ok)),
			Description: fmt.Sprintf("has the %d successful RPCs answered in turn by %v", len(ok), bs),
			edit: func(evs []trace.Event) []trace.Event {
				for k, i := range okResults(evs) {
					answerBy(evs, i, bs[k%len(bs)])
				}
				return evs
			},
		}}
	},
}

// pinBackend: every successful RPC sent from the k-th on answered by the
// backend that answered the one before: a policy that stopped spreading
// (the old pick_first kept after a switch).
var pinBackend = Family{
	Name:        "pin-backend",
	Description: "has every successful RPC from one on answered by the backend of the RPC before it",
	candidates: func(tr *trace.Trace) []Mutation {
		ok := okResults(tr.Events)
		var out []Mutation
		for k := 1; k < len(ok); k++ {
			prev, first := tr.Events[ok[k-1]], tr.Events[ok[k]]
			if first.Backend == prev.Backend {
				continue
			}
			b := prev.Backend
			out = append(out, Mutation{ // first, answered by another, changes
				ID:          fmt.Sprintf("pin-backend[%s,%s]", first.RPC, b),
				Description: fmt.Sprintf("has %s and every successful RPC after it answered by %s", describeResult(first), b),
				edit: func(evs []trace.Event) []trace.Event {
					for _, i := range okResults(evs)[k:] {
						answerBy(evs, i, b)
					}
					return evs
				},
			})
		}
		return out
	},
}
