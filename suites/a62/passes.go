package a62

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// The evidence of the statistical shuffle specs (uniform.go): the lists the
// scenario gave the client, and the order the client tried each one in, as
// the capture saw it.

// list is one address list the scenario gave the client: a resolver
// update's endpoints, or an xds step's EDS endpoints, as concrete
// addresses, one per endpoint, in the order given.
type list struct {
	at    time.Duration // the step's time
	addrs []string
}

// listsOf are the lists of refusing endpoints tr's scenario gave, in
// timeline order: each resolve step's endpoints, each xds step's endpoints
// (the first priority's first locality: the statistical xDS spec has one),
// each by its first address, when the scenario makes every one of them
// refuse. They come from the scenario, not from the trace's resolver
// updates, which an xDS client's trace shows only when it is the
// reference's.
func listsOf(tr *trace.Trace) []list {
	refusing := map[scenario.Addr]bool{}
	for _, st := range tr.Header.Scenario.Steps {
		if f, ok := st.Action.(scenario.SetFault); ok && f.Fault == scenario.Reset {
			refusing[f.Addr] = true
		}
	}
	var out []list
	for _, st := range tr.Header.Scenario.Steps {
		var addrs []scenario.Addr
		switch a := st.Action.(type) {
		case scenario.ResolverUpdate:
			for _, ep := range a.Endpoints {
				addrs = append(addrs, ep.Addrs[0])
			}
		case scenario.SetXDS:
			for _, la := range a.Resources.Endpoints {
				if len(la.Priorities) > 0 && len(la.Priorities[0].Localities) > 0 {
					for _, ep := range la.Priorities[0].Localities[0].Endpoints {
						addrs = append(addrs, ep.Addr)
					}
				}
			}
		}
		if len(addrs) == 0 || slices.ContainsFunc(addrs, func(a scenario.Addr) bool { return !refusing[a] }) {
			continue
		}
		l := list{at: st.At}
		for _, a := range addrs {
			l.addrs = append(l.addrs, spec.Addr(tr, a))
		}
		out = append(out, l)
	}
	return out
}

// pass is what the client did with one list: the order it tried the list's
// endpoints in, as their positions in the list, or, when the pass says
// nothing of the order, why.
type pass struct {
	order []int  // order[i]: the list position of the i-th endpoint tried
	why   string // non-empty: the pass is not usable
}

// passesOf reads each list's pass from the capture: the first connection
// attempt to each of the list's addresses, in time order. A pass is usable
// when it is one pick_first pass over every endpoint of the list, tried one
// at a time, each attempt leaving only once the one before it was refused:
// that is what a pass over refusing endpoints looks like, and it also
// guards against a capture that stamps a SYN late (DESIGN.md: the lab's
// capture has been seen to do so for a run's first SYN), which would show
// an attempt leaving before its predecessor's refusal.
//
// The lists of these specs are fresh, each of addresses no other list has,
// so every attempt to a list's address belongs to its pass.
func passesOf(tr *trace.Trace, lists []list) []pass {
	attempts := spec.Attempts(tr.Events)
	rsts := spec.Of(tr, trace.KindRST)
	out := make([]pass, len(lists))
	for i, l := range lists {
		out[i] = passOf(l, attempts, rsts)
	}
	return out
}

func passOf(l list, attempts, rsts []trace.Event) pass {
	var firsts []trace.Event
	for _, a := range attempts {
		if slices.Contains(l.addrs, a.Addr) && !slices.ContainsFunc(firsts, func(f trace.Event) bool { return f.Addr == a.Addr }) {
			firsts = append(firsts, a)
		}
	}
	if len(firsts) < len(l.addrs) {
		return pass{why: fmt.Sprintf("%d of its %d endpoints were tried", len(firsts), len(l.addrs))}
	}
	var p pass
	for i, a := range firsts {
		if i > 0 {
			prev := firsts[i-1]
			refused, ok := refusal(prev, rsts)
			switch {
			case !ok:
				return pass{why: fmt.Sprintf("the attempt to %s (at %s) has no refusal in the capture", prev.Addr, trace.FormatT(prev.T))}
			case a.T < refused:
				return pass{why: fmt.Sprintf("the attempt to %s left at %s, before the one to %s was refused (%s): not one at a time",
					a.Addr, trace.FormatT(a.T), prev.Addr, trace.FormatT(refused))}
			}
		}
		p.order = append(p.order, slices.Index(l.addrs, a.Addr))
	}
	return p
}

// refusal is the time the capture saw attempt a refused: the first RST to
// its address (and client port, in the lab) at or after its SYN.
func refusal(a trace.Event, rsts []trace.Event) (time.Duration, bool) {
	for _, r := range rsts {
		if r.Addr == a.Addr && r.T >= a.T && (a.Port == 0 || r.Port == a.Port) {
			return r.T, true
		}
	}
	return 0, false
}

// usable splits passes into the orders of the usable ones and a summary of
// why the others are not ("list 3 (+120.0ms): 2 of its 3 endpoints were
// tried; …"), at most a few of them named.
func usable(lists []list, passes []pass) (orders [][]int, skipped string) {
	var why []string
	for i, p := range passes {
		if p.why != "" {
			why = append(why, fmt.Sprintf("list %d (%s): %s", i+1, trace.FormatT(lists[i].at), p.why))
			continue
		}
		orders = append(orders, p.order)
	}
	const shown = 3
	if len(why) > shown {
		why = append(why[:shown], fmt.Sprintf("and %d more", len(why)-shown))
	}
	return orders, strings.Join(why, "; ")
}

// orderIndex numbers the orders of n endpoints from 0 to n!−1 (the Lehmer
// code), the order as given being 0.
func orderIndex(order []int) int {
	idx := 0
	for i, x := range order {
		smaller := 0
		for _, y := range order[i+1:] {
			if y < x {
				smaller++
			}
		}
		idx = idx*(len(order)-i) + smaller
	}
	return idx
}

// orderNames names the orders of n endpoints, in orderIndex's numbering, by
// their list positions from 1: for three, "123", "132", "213", …
func orderNames(n int) []string {
	var out []string
	var walk func(prefix []int)
	walk = func(prefix []int) {
		if len(prefix) == n {
			var b strings.Builder
			for _, x := range prefix {
				b.WriteString(strconv.Itoa(x + 1))
			}
			out = append(out, b.String())
			return
		}
		for x := range n {
			if !slices.Contains(prefix, x) {
				walk(append(slices.Clone(prefix), x))
			}
		}
	}
	walk(nil)
	return out
}

// inOrder reports whether order is the list's own order.
func inOrder(order []int) bool {
	for i, x := range order {
		if x != i {
			return false
		}
	}
	return true
}
