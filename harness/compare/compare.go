// Package compare compares two traces of one scenario semantically, golden
// against observed, and reports the first divergence with context
// (DESIGN.md, "Trace format" and "Data flow").
//
// Events are matched per lane (trace.Lane: per address, RPC, subchannel,
// policy; captured packets per address). Within a lane order matters: the
// i-th event of the golden lane must say what the i-th observed one says.
// Across lanes only times relate events: every matched pair must lie within
// the tolerance that Options gives its kind. What legitimately differs
// between runs is never compared: subchannel ids (matched by address list
// and creation order), client ports, timer ids and, by default, the wording
// of errors.
package compare

import (
	"sort"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Traces compares the events of two traces; see Events.
func Traces(golden, observed *trace.Trace, o Options) Result {
	return Events(golden.Events, observed.Events, o)
}

// Events compares observed against golden, lane by lane, and returns the
// first divergence by time, or an equal Result. Both must be in time order,
// as trace.Read and the simulator give them.
func Events(golden, observed []trace.Event, o Options) Result {
	rename := mapSubchannels(golden, observed)
	g := byLane(golden, o, nil)
	ob := byLane(observed, o, rename)
	r := Result{}
	for _, lane := range laneNames(g, ob) {
		r.Lanes++
		r.Events += max(len(g[lane]), len(ob[lane]))
		d := compareLane(g[lane], ob[lane], o)
		if d == nil {
			continue
		}
		r.DivergentLanes++
		if r.Divergence == nil || d.At < r.Divergence.At {
			r.Divergence = d
		}
	}
	return r
}

// laneNames lists the lanes of golden, sorted, then those only observed
// has, sorted: of two divergences at one time the report names one in a
// golden lane, and always the same one.
func laneNames(golden, observed map[string][]item) []string {
	names := sortedKeys(golden, nil)
	return append(names, sortedKeys(observed, golden)...)
}

// sortedKeys lists the lanes of m that are not in but, sorted.
func sortedKeys(m, but map[string][]item) []string {
	var names []string
	for l := range m {
		if _, ok := but[l]; !ok {
			names = append(names, l)
		}
	}
	sort.Strings(names)
	return names
}

// compareLane walks one lane of both traces in step and returns its first
// divergence, or nil.
func compareLane(g, ob []item, o Options) *Divergence {
	for i := 0; i < len(g) || i < len(ob); i++ {
		switch {
		case i == len(ob):
			return newDivergence(Missing, g, ob, i, o)
		case i == len(g):
			return newDivergence(Extra, g, ob, i, o)
		case g[i].key != ob[i].key:
			return newDivergence(classify(g, ob, i), g, ob, i, o)
		}
		tol, _ := o.tolerance(g[i].ev.Kind)
		if abs(ob[i].ev.T-g[i].ev.T) > tol {
			return newDivergence(Shifted, g, ob, i, o)
		}
	}
	return nil
}

// lookahead is how far classify looks for the event it did not find.
const lookahead = 8

// classify says how two lanes that agree before index i differ at i: the
// golden event comes later in the observed lane and the observed one later
// in the golden lane (Reordered), only the former (the observed event is
// Extra), only the latter (the golden event is Missing), or neither
// (Changed).
func classify(g, ob []item, i int) Diff {
	later := find(ob, i+1, g[i].key)
	earlier := find(g, i+1, ob[i].key)
	switch {
	case later && earlier:
		return Reordered
	case later:
		return Extra
	case earlier:
		return Missing
	}
	return Changed
}

func find(its []item, from int, key string) bool {
	for j := from; j < len(its) && j < from+lookahead; j++ {
		if its[j].key == key {
			return true
		}
	}
	return false
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
