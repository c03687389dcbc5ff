package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// carrier is what carries out a timeline, in either mode (simRun, labRun):
// time, the events so far, a way to let time pass, and the stimuli.
type carrier interface {
	// now is the time since the run started.
	now() time.Duration
	// events returns the events recorded so far, in time order.
	events() []trace.Event
	// advance lets time pass until cond holds or the run's time reaches
	// until, whichever is first.
	advance(ctx context.Context, cond func() bool, until time.Duration) error
	// apply carries out one action now.
	apply(a scenario.Action) error
}

// due is a step whose time is known.
type due struct {
	at     time.Duration
	order  int // position in the scenario, for ties
	action scenario.Action
}

// armed is a step waiting for its condition.
type armed struct {
	w     *watch
	delay time.Duration
	order int
	act   scenario.Action
}

// deadline is a WaitFor in force.
type deadline struct {
	w     *watch
	until time.Duration
	order int
}

// timeline carries out a scenario's steps on a carrier.
type timeline struct {
	s      *scenario.Scenario
	addrOf scenario.AddrFunc
	w      carrier
	dues   []due
	arms   []*armed
	waits  []*deadline
}

func newTimeline(s *scenario.Scenario, addrOf scenario.AddrFunc, w carrier) (*timeline, error) {
	tl := &timeline{s: s, addrOf: addrOf, w: w}
	for i, st := range s.Steps {
		if st.After == nil {
			tl.dues = append(tl.dues, due{at: st.At, order: i, action: st.Action})
			continue
		}
		wt, err := tl.watchFor(*st.After)
		if err != nil {
			return nil, fmt.Errorf("steps[%d]: %w", i, err)
		}
		tl.arms = append(tl.arms, &armed{w: wt, delay: st.Delay, order: i, act: st.Action})
	}
	tl.sortDues()
	return tl, nil
}

func (tl *timeline) watchFor(c scenario.Cond) (*watch, error) {
	addr := ""
	if c.Addr != "" {
		a, err := tl.s.Concrete(c.Addr, tl.addrOf)
		if err != nil {
			return nil, err
		}
		addr = a
	}
	if s, ok := tl.w.(interface{ substitute(string) string }); ok && c.Policy == "" {
		c.Kind = s.substitute(c.Kind) // a third party's evidence for the root policy's
	}
	return newWatch(c, addr), nil
}

func (tl *timeline) sortDues() {
	slices.SortStableFunc(tl.dues, func(a, b due) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.order - b.order
	})
}

// run carries out the timeline until the scenario's End, an EndRun step, or
// an error (a WaitFor not met in time is one).
func (tl *timeline) run(ctx context.Context) error {
	for {
		next := tl.nextTime()
		if err := tl.w.advance(ctx, tl.triggered, next); err != nil {
			return err
		}
		tl.fireTriggered()
		finished, err := tl.applyDue()
		if err != nil || finished {
			return err
		}
		if err := tl.checkWaits(); err != nil {
			return err
		}
		if tl.w.now() >= tl.s.End {
			return nil
		}
	}
}

// nextTime is when the timeline next has something to do on its own.
func (tl *timeline) nextTime() time.Duration {
	next := tl.s.End
	if len(tl.dues) > 0 && tl.dues[0].at < next {
		next = tl.dues[0].at
	}
	for _, d := range tl.waits {
		if d.until < next {
			next = d.until
		}
	}
	return max(next, tl.w.now())
}

// triggered reports whether any armed condition or wait is newly met.
func (tl *timeline) triggered() bool {
	evs := tl.w.events()
	for _, a := range tl.arms {
		if a.w.update(evs) {
			return true
		}
	}
	for _, d := range tl.waits {
		if d.w.update(evs) {
			return true
		}
	}
	return false
}

// fireTriggered turns met conditions into due steps, Delay after the event
// that met them.
func (tl *timeline) fireTriggered() {
	evs := tl.w.events()
	kept := tl.arms[:0]
	for _, a := range tl.arms {
		if !a.w.update(evs) {
			kept = append(kept, a)
			continue
		}
		at := evs[a.w.metAt].T + a.delay
		tl.dues = append(tl.dues, due{at: max(at, tl.w.now()), order: a.order, action: a.act})
	}
	tl.arms = kept
	tl.sortDues()
}

// applyDue applies every step due by now, in order.
func (tl *timeline) applyDue() (finished bool, err error) {
	now := tl.w.now()
	for len(tl.dues) > 0 && tl.dues[0].at <= now {
		d := tl.dues[0]
		tl.dues = tl.dues[1:]
		switch a := d.action.(type) {
		case scenario.EndRun:
			return true, nil
		case scenario.WaitFor:
			wt, err := tl.watchFor(a.Cond)
			if err != nil {
				return false, fmt.Errorf("steps[%d]: %w", d.order, err)
			}
			tl.waits = append(tl.waits, &deadline{w: wt, until: now + a.Timeout, order: d.order})
		default:
			if err := tl.w.apply(a); err != nil {
				return false, fmt.Errorf("steps[%d] (%s) at %v: %w", d.order, a.Kind(), now, err)
			}
		}
	}
	return false, nil
}

// checkWaits drops met waits and fails on one whose time is up.
func (tl *timeline) checkWaits() error {
	evs := tl.w.events()
	kept := tl.waits[:0]
	for _, d := range tl.waits {
		switch {
		case d.w.update(evs):
		case tl.w.now() >= d.until:
			return fmt.Errorf("steps[%d]: waited until %v for %s; it did not happen", d.order, d.until, describe(d.w.cond))
		default:
			kept = append(kept, d)
		}
	}
	tl.waits = kept
	return nil
}

func describe(c scenario.Cond) string {
	s := c.Kind
	for _, kv := range [][2]string{{"state", c.State}, {"addr", string(c.Addr)}, {"backend", c.Backend}, {"rpc", c.RPC}, {"code", c.Code}, {"timer", c.Timer}, {"policy", c.Policy}, {"xds", c.XDS}, {"type", c.Type}} {
		if kv[1] != "" {
			s += " " + kv[0] + "=" + kv[1]
		}
	}
	if c.N() > 1 {
		s += fmt.Sprintf(" (×%d)", c.N())
	}
	return s
}
