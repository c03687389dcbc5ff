package runner

import (
	"context"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// World is what a scenario's timeline needs from whatever carries it out,
// for runners outside this package (harness/driver runs scenarios through
// driver processes). Times are on the scenario's timebase.
type World interface {
	// Now is the time since the scenario started.
	Now() time.Duration
	// Events returns the events recorded so far, in arrival order
	// (append-only: the timeline's watches read only what is new).
	Events() []trace.Event
	// Advance lets time pass until cond holds or Now reaches until,
	// whichever is first.
	Advance(ctx context.Context, cond func() bool, until time.Duration) error
	// Apply carries out one action now.
	Apply(a scenario.Action) error
}

// Substitute is implemented by a World whose implementation does not
// record some kinds of event a scenario may wait on (a third party has no
// policy events): it names the kind that stands in for kind, or returns
// kind itself.
type Substitute interface {
	Substitute(kind string) string
}

// RunWorld carries out s's timeline against w, with AddrOf's address plan,
// until the scenario's End, an EndRun step, or an error (a WaitFor not met in
// time is one).
func RunWorld(ctx context.Context, s *scenario.Scenario, w World) error {
	tl, err := newTimeline(s, AddrOf, exported{w})
	if err != nil {
		return err
	}
	return tl.run(ctx)
}

// exported adapts a World to the timeline's world.
type exported struct{ w World }

func (e exported) now() time.Duration { return e.w.Now() }
func (e exported) substitute(kind string) string {
	if s, ok := e.w.(Substitute); ok {
		return s.Substitute(kind)
	}
	return kind
}
func (e exported) events() []trace.Event { return e.w.Events() }
func (e exported) apply(a scenario.Action) error {
	return e.w.Apply(a)
}
func (e exported) advance(ctx context.Context, cond func() bool, until time.Duration) error {
	return e.w.Advance(ctx, cond, until)
}

// LabEvent turns a lab event into a trace event, as the lab runner does.
func LabEvent(e netlab.Event) trace.Event { return fromLab(e) }

// LabFault is the lab's fault for a scenario's fault type ("" is none).
func LabFault(f scenario.FaultType) netlab.Fault { return labFaults[f] }

// LabBackends are the lab's backend configs for s's backends.
func LabBackends(s *scenario.Scenario) []netlab.BackendConfig {
	var out []netlab.BackendConfig
	for _, b := range s.Backends {
		out = append(out, netlab.BackendConfig{Name: b.Name, Families: labFamilies[b.Stack]})
	}
	return out
}
