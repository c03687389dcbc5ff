package compare

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Result is the outcome of a comparison.
type Result struct {
	// Divergence is the first divergence by time; nil when the traces are
	// equal.
	Divergence *Divergence
	// Lanes and Events count what took part (Events: the longer side of
	// each lane); DivergentLanes how many lanes differ.
	Lanes, Events, DivergentLanes int
}

// Equal reports whether the traces agree on every selected event.
func (r Result) Equal() bool { return r.Divergence == nil }

// Diff says how a lane diverges.
type Diff int

// The ways a lane diverges.
const (
	Shifted   Diff = iota + 1 // the same event, further apart in time than the tolerance
	Missing                   // the golden lane has an event the observed one lacks
	Extra                     // the observed lane has an event the golden one lacks
	Changed                   // the events at one place in the lane say different things
	Reordered                 // the lanes have the same events in another order
)

var diffNames = map[Diff]string{
	Shifted: "shifted", Missing: "missing", Extra: "extra", Changed: "changed", Reordered: "reordered",
}

func (d Diff) String() string { return diffNames[d] }

// Divergence is the first place where one lane of the observed trace
// departs from the golden one.
type Divergence struct {
	Diff Diff
	// Lane is the lane, named as the golden trace names it; ObservedLane
	// is its observed name when subchannel ids differ.
	Lane, ObservedLane string
	// At is when it happens: the earlier of the two events.
	At time.Duration
	// Expected is the golden event at the divergence, Seen the observed
	// one; either is nil when its lane has ended.
	Expected, Seen *trace.Event
	// Delta is Seen.T - Expected.T when both exist; Tolerance the
	// tolerance that applied, and ToleranceFrom where it came from
	// ("default", "for syn", "requirement A61-HE-DELAY-DEFAULT").
	Delta, Tolerance time.Duration
	ToleranceFrom    string
	// Fields names the fields that differ when Diff is Changed.
	Fields []string
	// Golden and Observed are events of the lane around the divergence;
	// GoldenAt and ObservedAt index the divergent event in them (equal to
	// the length when the lane has ended there).
	Golden, Observed     []trace.Event
	GoldenAt, ObservedAt int
}

// newDivergence describes a divergence at index i of lanes g and ob.
func newDivergence(diff Diff, g, ob []item, i int, o Options) *Divergence {
	d := &Divergence{Diff: diff}
	d.Lane, d.ObservedLane = laneName(g, ob)
	d.Expected, d.Seen = at(g, i), at(ob, i)
	d.At = earlier(d.Expected, d.Seen)
	kind := kindOf(d.Expected, d.Seen)
	d.Tolerance, d.ToleranceFrom = o.tolerance(kind)
	if d.Expected != nil && d.Seen != nil {
		d.Delta = d.Seen.T - d.Expected.T
	}
	if diff == Changed {
		d.Fields = fieldsThatDiffer(g[i].key, ob[i].key)
	}
	d.Golden, d.GoldenAt = around(g, i, o.context())
	d.Observed, d.ObservedAt = around(ob, i, o.context())
	return d
}

// laneName is the lane's golden name (or the observed one's own name when
// golden lacks the lane) and, when the observed events name it differently
// (another subchannel id), the observed name.
func laneName(g, ob []item) (lane, observed string) {
	var own string
	if len(ob) > 0 {
		own = trace.Lane(normalizeOwn(*ob[0].ev))
	}
	if len(g) == 0 {
		return own, ""
	}
	if own != g[0].lane {
		observed = own
	}
	return g[0].lane, observed
}

// normalizeOwn is an observed event with its own ids, for naming its lane.
func normalizeOwn(e trace.Event) trace.Event { return normalize(e, nil, true) }

func at(its []item, i int) *trace.Event {
	if i < len(its) {
		e := *its[i].ev
		return &e
	}
	return nil
}

func earlier(a, b *trace.Event) time.Duration {
	switch {
	case a == nil:
		return b.T
	case b == nil:
		return a.T
	}
	return min(a.T, b.T)
}

func kindOf(a, b *trace.Event) trace.Kind {
	if a != nil {
		return a.Kind
	}
	return b.Kind
}

// around returns up to n events of its before index i and n-1 from i on,
// and the index of i within them.
func around(its []item, i, n int) ([]trace.Event, int) {
	from := max(0, i-n)
	to := min(len(its), i+n)
	evs := make([]trace.Event, 0, to-from)
	for _, it := range its[from:to] {
		evs = append(evs, *it.ev)
	}
	return evs, i - from
}

// fieldsThatDiffer names the fields in which two keys (normalized events
// in JSON) differ, in the order of the Event struct.
func fieldsThatDiffer(a, b string) []string {
	var fa, fb map[string]json.RawMessage
	_ = json.Unmarshal([]byte(a), &fa) // keys are JSON objects keyOf made
	_ = json.Unmarshal([]byte(b), &fb)
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[trace.Event]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !bytes.Equal(fa[name], fb[name]) {
			names = append(names, name)
		}
	}
	return names
}
