package monitor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/session"
	"github.com/conformlab/conform/suites/spec"
)

// The priority monitor: A56, Child Connectivity State Tracking and
// Algorithm for Choosing a Priority.

// failoverTimeout is A56's failover timer.
const failoverTimeout = 10 * time.Second

// FailoverNotBeforeTimer: priority reaches a lower child only when the one
// above it failed or its failover timer fired.
var FailoverNotBeforeTimer = Monitor{
	Name:        "failover-not-before-timer",
	Requirement: "A56-CHOOSE-PENDING-TIMER",
	Invariant:   "priority starts a child only when the child above it reported TRANSIENT_FAILURE or has been connecting for its 10 s failover timer",
	Needs:       []trace.Evidence{trace.EvidencePackets, trace.EvidenceConfig},
	Applies: func(tr *trace.Trace) string {
		cs, why := childrenOf(tr)
		if why != "" {
			return why
		}
		if len(cs.firstAttempts(tr)) < 2 {
			return "not exercised: no child below the first priority was started"
		}
		return ""
	},
	Assert: func(g gomega.Gomega, tr *trace.Trace) {
		cs, _ := childrenOf(tr)
		tol := spec.TimerWithin(tr)
		b := breaches{rule: fmt.Sprintf("a lower priority should be started only when the one above it failed, or %v (±%v) after that one began connecting (its failover timer)", failoverTimeout, tol)}
		var s skipped
		firsts := cs.firstAttempts(tr)
		for k := 1; k < len(firsts); k++ {
			above, started := cs.addrs[k-1], firsts[k]
			if cs.failed(tr, above, started.T) {
				continue // TRANSIENT_FAILURE: failover at once (A56-TF-FAILOVER-AT-ONCE)
			}
			from, ok := connectingSince(tr, above, started.T)
			if !ok {
				b.addEvents([]trace.Event{started}, "%s started at %s, and %s above it had made no attempt", cs.names[k], trace.FormatT(started.T), cs.names[k-1])
				continue
			}
			s.try(func() {
				spec.RequireSteadyForLeast(tr, from.T, started.T, failoverTimeout-tol, cs.names[k-1]+"'s 10 s failover timer")
			}, func() {
				if started.T-from.T < failoverTimeout-tol {
					b.addEvents([]trace.Event{from, started}, "%s started %v after %s began connecting, which had not failed",
						cs.names[k], (started.T - from.T).Round(time.Millisecond), cs.names[k-1])
				}
			})
		}
		s.require()
		b.judge(g)
	},
}

// children are the priorities of a run's priority policy, highest first,
// with each one's addresses, as its configuration gave them; events up to
// `until` are judged (a new configuration after it).
type children struct {
	names []string
	addrs [][]string
	until time.Duration
}

// firstAttempts are the first attempts to each child's addresses before
// until, in priority order, as long as each child had one.
func (cs children) firstAttempts(tr *trace.Trace) []trace.Event {
	var out []trace.Event
	for _, as := range cs.addrs {
		first := trace.Select(spec.Attempts(trace.Window(tr.Events, 0, cs.until)), func(e trace.Event) bool { return slices.Contains(as, e.Addr) })
		if len(first) == 0 {
			break
		}
		out = append(out, first[0])
	}
	return out
}

// failed reports whether a child on addrs had failed by t, as the capture
// shows it: the last answer before t to each of its addresses is a
// refusal (an RST, not a SYN-ACK), so every one of its connections failed
// and it is in TRANSIENT_FAILURE (sticky: A62).
func (cs children) failed(tr *trace.Trace, addrs []string, t time.Duration) bool {
	for _, a := range addrs {
		answers := trace.Select(trace.Window(tr.Events, 0, t+1), trace.OfKind(trace.KindRST, trace.KindSYNACK), func(e trace.Event) bool { return e.Addr == a })
		if len(answers) == 0 || answers[len(answers)-1].Kind != trace.KindRST {
			return false
		}
	}
	return true
}

// connectingSince is the attempt with which a child on addrs began
// connecting last before t: its first attempt after its last connection
// was established (SYN-ACK), or its first attempt at all. Its failover
// timer started no later.
func connectingSince(tr *trace.Trace, addrs []string, t time.Duration) (trace.Event, bool) {
	mine := func(e trace.Event) bool { return slices.Contains(addrs, e.Addr) }
	evs := trace.Window(tr.Events, 0, t)
	from := time.Duration(0)
	if acks := trace.Select(evs, trace.OfKind(trace.KindSYNACK), mine); len(acks) > 0 {
		from = acks[len(acks)-1].T
	}
	as := trace.Select(spec.Attempts(trace.Window(evs, from, t)), mine)
	if len(as) == 0 {
		return trace.Event{}, false
	}
	return as[0], true
}

// childrenOf is the run's priorities, or why it has none known: a
// path-based priority policy (its children named by the endpoints' "path"
// attribute) or an xDS client whose one EDS cluster has several
// priorities.
func childrenOf(tr *trace.Trace) (children, string) {
	p, why := rootPolicy(tr)
	switch {
	case why != "":
		return children{}, why
	case p.name == "xds" && sendsSessions(tr.Header.Scenario):
		return children{}, "the RPCs carry session cookies: xds_override_host connects to a cookie's address whichever priority it is in (A75), so an attempt does not say priority started its child"
	case p.name == "xds":
		return xdsChildren(tr)
	case p.name == "priority_experimental" || p.name == "priority":
		return pathChildren(tr, p)
	}
	return children{}, fmt.Sprintf("the client's root policy is %s: no priority policy", p.name)
}

// sendsSessions reports whether any RPC of s carries a session cookie.
func sendsSessions(s *scenario.Scenario) bool {
	return slices.ContainsFunc(s.Steps, func(st scenario.Step) bool {
		r, ok := st.Action.(scenario.StartRPC)
		_, cookie := r.Metadata[session.Header]
		return ok && cookie
	})
}

// pathChildren: the config's priorities, each with the addresses of the
// first resolver update's endpoints whose path starts with it; judged
// until the next update.
func pathChildren(tr *trace.Trace, p policy) (children, string) {
	var cs children
	if err := json.Unmarshal(p.config["priorities"], &cs.names); err != nil || len(cs.names) < 2 {
		return children{}, "not exercised: the priority config has fewer than two priorities"
	}
	var first *scenario.ResolverUpdate
	for _, st := range tr.Header.Scenario.Steps {
		if u, ok := st.Action.(scenario.ResolverUpdate); ok {
			first = &u
			break
		}
	}
	if first == nil {
		return children{}, "not exercised: the client was never given addresses"
	}
	cs.addrs = make([][]string, len(cs.names))
	for _, ep := range first.Endpoints {
		child, _, _ := strings.Cut(ep.Attrs["path"], "/")
		if i := slices.Index(cs.names, child); i >= 0 {
			for _, a := range ep.Addrs {
				cs.addrs[i] = append(cs.addrs[i], spec.Addr(tr, a))
			}
		}
	}
	cs.until = tr.Events[len(tr.Events)-1].T + 1
	if ups := spec.ResolverUpdates(tr); len(ups) > 1 {
		cs.until = ups[1].T
	}
	return cs, ""
}

// xdsChildren: the first xDS state's one load assignment, when it has
// several priorities; judged until the next state was served.
func xdsChildren(tr *trace.Trace) (children, string) {
	var first *scenario.SetXDS
	for _, st := range tr.Header.Scenario.Steps {
		if x, ok := st.Action.(scenario.SetXDS); ok {
			first = &x
			break
		}
	}
	if first == nil || len(first.Resources.Endpoints) != 1 || len(first.Resources.Endpoints[0].Priorities) < 2 {
		return children{}, "not exercised: the xDS configuration has no cluster of several priorities (one load assignment, the only one)"
	}
	var cs children
	for i, pr := range first.Resources.Endpoints[0].Priorities {
		cs.names = append(cs.names, fmt.Sprintf("priority %d", i))
		var as []string
		for _, l := range pr.Localities {
			for _, ep := range l.Endpoints {
				for _, a := range append([]scenario.Addr{ep.Addr}, ep.AdditionalAddrs...) {
					as = append(as, spec.Addr(tr, a))
				}
			}
		}
		cs.addrs = append(cs.addrs, as)
	}
	cs.until = tr.Events[len(tr.Events)-1].T + 1
	if at, ok := spec.XDSServedAt(tr, "2"); ok {
		cs.until = at
	}
	return cs, ""
}
