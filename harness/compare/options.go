package compare

import (
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// LabTolerance is a sensible default Tolerance when either trace comes from
// the lab: kernel timestamps are within tens of microseconds of the connect
// call, but scheduling on a shared machine moves user-space events by a few
// milliseconds (DESIGN.md, "Observation").
const LabTolerance = 10 * time.Millisecond

// Options say which events take part in a comparison and how far apart in
// time matched events may be. The zero value compares every event that has a
// lane, with no time tolerance (simulator against simulator).
type Options struct {
	// Select keeps the events that take part: those for which every
	// predicate holds (trace.FromSource, trace.OfKind, or any trace.Pred).
	// Lab traces carry capture noise that simulated ones lack, so a
	// comparison across modes usually keeps only some sources or kinds.
	Select []trace.Pred

	// Tolerance is the default: two matched events may be this far apart.
	Tolerance time.Duration
	// KindTolerance overrides Tolerance for the kinds it names.
	KindTolerance map[trace.Kind]time.Duration
	// Requirement, when set, overrides both for the kinds it covers: the
	// tolerance belongs to the requirement being checked (DESIGN.md,
	// "Trace format").
	Requirement *Requirement

	// ExactText compares Err and Detail literally. By default only their
	// presence is compared: their wording is each implementation's own.
	ExactText bool
	// Ignore names fields (by their JSON names: "peer", "backend") left out
	// of the comparison: fields that only one kind of run records, as a
	// lab capture records the peer and the simulator does not.
	Ignore []string
	// Context is how many events of the diverging lane each side shows
	// before the divergence (after it, one fewer); zero means 3.
	Context int
}

// Requirement is the tolerance a requirement check sets for its comparison.
type Requirement struct {
	ID        string        // the requirement ("A61-HE-DELAY-DEFAULT")
	Tolerance time.Duration // how far apart matched events may be
	Kinds     []trace.Kind  // the kinds it applies to; none means every kind
}

// tolerance is how far apart two events of kind k may be, and where that
// figure comes from, for the report.
func (o Options) tolerance(k trace.Kind) (time.Duration, string) {
	if r := o.Requirement; r != nil && r.covers(k) {
		return r.Tolerance, "requirement " + r.ID
	}
	if d, ok := o.KindTolerance[k]; ok {
		return d, "for " + string(k)
	}
	return o.Tolerance, "default"
}

func (r *Requirement) covers(k trace.Kind) bool {
	if len(r.Kinds) == 0 {
		return true
	}
	for _, rk := range r.Kinds {
		if rk == k {
			return true
		}
	}
	return false
}

func (o Options) context() int {
	if o.Context > 0 {
		return o.Context
	}
	return 3
}

func (o Options) selects(e trace.Event) bool {
	for _, p := range o.Select {
		if !p(e) {
			return false
		}
	}
	return true
}
