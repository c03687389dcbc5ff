package replay

import (
	"slices"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// behaviour is what an address did to the client, as the trace shows it.
type behaviour int

const (
	answered behaviour = iota // connections succeeded: no fault
	hung                      // attempts never finished: drop
	refused                   // attempts failed at once: reset
	lost                      // a READY connection went away: down
)

// observation is evidence that addr behaved as b during [from, to].
type observation struct {
	addr     string
	from, to time.Duration
	b        behaviour
}

// tracked is one subchannel as the inference follows it.
type tracked struct {
	addrs     []string
	connected string        // the READY address, if known
	since     time.Duration // start of the attempt under way
	open      bool          // an attempt is under way
}

// observer turns subchannel events into observations.
type observer struct {
	in  Inference
	scs map[string]*tracked
	obs []observation
}

func (in Inference) observe(evs []trace.Event) []observation {
	o := &observer{in: in, scs: map[string]*tracked{}}
	for _, e := range evs {
		if e.Source == trace.SourcePolicy {
			o.event(e)
		}
	}
	return o.obs
}

func (o *observer) event(e trace.Event) {
	sc := o.scs[e.Subchannel]
	switch {
	case e.Kind == trace.KindSubchannelNew:
		o.scs[e.Subchannel] = &tracked{addrs: e.Addrs}
	case sc == nil:
	case e.Kind == trace.KindSubchannelAddrs:
		wasOpen := sc.open
		o.abandon(sc, e.T)
		sc.addrs, sc.open, sc.since = e.Addrs, wasOpen, e.T
	case e.Kind == trace.KindSubchannelShutdown:
		o.abandon(sc, e.T)
		delete(o.scs, e.Subchannel)
	case e.Kind == trace.KindSubchannelState:
		o.state(sc, e)
	}
}

func (o *observer) state(sc *tracked, e trace.Event) {
	switch e.State {
	case "CONNECTING":
		if !sc.open {
			sc.open, sc.since = true, e.T
		}
	case "READY":
		o.ready(sc, e)
	case "TRANSIENT_FAILURE":
		if sc.open {
			o.failed(sc, e.T)
		}
	case "IDLE":
		if sc.connected != "" {
			o.add(sc.connected, e.T, e.T, lost)
			sc.connected = ""
		}
		o.abandon(sc, e.T)
	}
}

// ready: the address answered. An attempt that took RefusedWithin or more
// hung first and was answered by a SYN retransmission: the fault was
// cleared between the retransmission before and the one that got through.
func (o *observer) ready(sc *tracked, e trace.Event) {
	addr := e.Addr
	if addr == "" && len(sc.addrs) == 1 {
		addr = sc.addrs[0]
	}
	since, open := sc.since, sc.open
	sc.open, sc.connected = false, addr
	if addr == "" {
		return // a multi-address subchannel that does not say which answered
	}
	d := e.T - since
	if !open || d < o.in.RefusedWithin {
		o.add(addr, since, e.T, answered)
		return
	}
	before, through := retransmissionAround(d)
	o.add(addr, since, since+before, hung)
	o.add(addr, since+through, e.T, answered)
}

// failed: every address of the subchannel failed, at once (refused) or
// after RefusedWithin or more (hung).
func (o *observer) failed(sc *tracked, t time.Duration) {
	b := refused
	if t-sc.since >= o.in.RefusedWithin {
		b = hung
	}
	for _, a := range sc.addrs {
		o.add(a, sc.since, t, b)
	}
	sc.open = false
}

// abandon ends an attempt the policy gave up on (shutdown, new addresses):
// pending for HungAfter or more, its addresses hung.
func (o *observer) abandon(sc *tracked, t time.Duration) {
	if sc.open && t-sc.since >= o.in.HungAfter {
		for _, a := range sc.addrs {
			o.add(a, sc.since, t, hung)
		}
	}
	sc.open = false
}

func (o *observer) add(addr string, from, to time.Duration, b behaviour) {
	o.obs = append(o.obs, observation{addr: addr, from: from, to: to, b: b})
}

// synRetransmissions are when the kernel retransmits an unanswered SYN,
// after the first (DESIGN.md: about 1 s, 3 s, 7 s, 15 s …).
var synRetransmissions = []time.Duration{1, 3, 7, 15, 31, 63, 127}

// retransmissionAround returns the retransmission times, from the first
// SYN, just before and at the one that an attempt lasting d succeeded with.
func retransmissionAround(d time.Duration) (before, through time.Duration) {
	for _, r := range synRetransmissions {
		if r*time.Second > d {
			break
		}
		before, through = through, r*time.Second
	}
	return before, through
}

// timedAction is a step of the inferred timeline; class orders actions of
// one instant: faults first, then resolver updates, then RPCs.
type timedAction struct {
	at     time.Duration
	class  int
	action scenario.Action
}

// faultSteps turns each address's observations into fault changes: a change
// is placed midway between the last evidence of the old behaviour and the
// first of the new (at 0 when there was none before), a lost connection at
// the moment it was lost.
func faultSteps(obs []observation, m Mapping) []timedAction {
	byAddr := map[string][]observation{}
	for _, o := range obs {
		byAddr[o.addr] = append(byAddr[o.addr], o)
	}
	var out []timedAction
	for addr, os := range byAddr {
		slices.SortStableFunc(os, func(a, b observation) int { return int(a.from - b.from) })
		out = append(out, addrFaultSteps(m[addr], os)...)
	}
	return out
}

func addrFaultSteps(sym scenario.Addr, os []observation) []timedAction {
	var out []timedAction
	cur, lastEnd, seen := answered, time.Duration(0), false
	for _, o := range os {
		b := o.b
		if b == refused && cur == lost {
			b = lost // a downed address refuses too
		}
		if b != cur {
			at := changeTime(seen, lastEnd, o)
			out = append(out, timedAction{at: at, action: faultAction(sym, b)})
			cur = b
		}
		lastEnd, seen = max(lastEnd, o.to), true
	}
	return out
}

func changeTime(seen bool, lastEnd time.Duration, o observation) time.Duration {
	switch {
	case o.b == lost:
		return o.from
	case !seen:
		return 0
	case o.from <= lastEnd:
		return o.from
	default:
		return lastEnd + (o.from-lastEnd)/2
	}
}

func faultAction(sym scenario.Addr, b behaviour) scenario.Action {
	switch b {
	case hung:
		return scenario.Fault(sym, scenario.Drop)
	case refused:
		return scenario.Fault(sym, scenario.Reset)
	case lost:
		return scenario.Fault(sym, scenario.Down)
	}
	return scenario.Clear(sym)
}
