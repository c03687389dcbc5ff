package mutate

import (
	"fmt"
	"slices"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Connection attempts, as the capture sees them: an attempt is a SYN that is
// not a retransmission, with what belongs to it: its retransmissions, the
// SYN-ACK or RST that answered it, and (in the lab) the backend's accept
// and preface of the connection it opened.

type attempt struct {
	syn     int   // the SYN's index
	members []int // the SYN and what belongs to it, in order
}

func isAttempt(e trace.Event) bool { return e.Kind == trace.KindSYN && !e.Retransmit }

// attemptsOf lists evs' attempts in time order.
func attemptsOf(evs []trace.Event) []attempt {
	var out []attempt
	for i, s := range evs {
		if !isAttempt(s) {
			continue
		}
		a := attempt{syn: i, members: []int{i}}
		for j := i + 1; j < len(evs); j++ {
			e := evs[j]
			if e.Addr != s.Addr {
				continue
			}
			if isAttempt(e) {
				if s.Port == 0 {
					break // the next attempt to the address
				}
				continue // the lab names each attempt's connection by its port
			}
			sameConn := (s.Port == 0 || e.Port == s.Port || peerPort(e.Peer) == s.Port) &&
				(s.Subchannel == "" || e.Subchannel == "" || e.Subchannel == s.Subchannel)
			switch {
			case !sameConn:
			case e.Source == trace.SourceCapture && (e.Kind == trace.KindSYN || e.Kind == trace.KindSYNACK || e.Kind == trace.KindRST):
				a.members = append(a.members, j)
			case e.Source == trace.SourceBackend && s.Port != 0 && (e.Kind == trace.KindAccept || e.Kind == trace.KindPreface):
				a.members = append(a.members, j)
			}
		}
		out = append(out, a)
	}
	return out
}

// peerPort is the port of an "ip:port" peer, or 0.
func peerPort(peer string) int {
	for i := len(peer) - 1; i >= 0; i-- {
		if peer[i] == ':' {
			var p int
			if _, err := fmt.Sscanf(peer[i+1:], "%d", &p); err == nil {
				return p
			}
			return 0
		}
	}
	return 0
}

func describeAttempt(evs []trace.Event, k int, a attempt) string {
	s := evs[a.syn]
	return fmt.Sprintf("the %s connection attempt (SYN to %s %s)", ordinal(k+1), s.Addr, at(s.T))
}

var shiftAttempt = Family{
	Name:        "shift-attempt",
	Description: "moves one connection attempt (its SYN and what answered it) in time",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, a := range attemptsOf(evs) {
			for _, d := range shifts {
				if evs[a.syn].T+d < 0 {
					continue
				}
				members := a.members
				out = append(out, Mutation{
					ID:          fmt.Sprintf("shift-attempt[%d,%s]", k+1, signed(d)),
					Description: fmt.Sprintf("moves %s %s", describeAttempt(evs, k, a), later(d)),
					edit: func(evs []trace.Event) []trace.Event {
						for _, i := range members {
							evs[i].T += d
						}
						return evs
					},
				})
			}
		}
		return out
	},
}

var dropAttempt = Family{
	Name:        "drop-attempt",
	Description: "removes one connection attempt (its SYN and what answered it): the client never made it",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, a := range attemptsOf(evs) {
			members := a.members
			out = append(out, Mutation{
				ID:          fmt.Sprintf("drop-attempt[%d]", k+1),
				Description: fmt.Sprintf("removes %s", describeAttempt(evs, k, a)),
				edit:        func(evs []trace.Event) []trace.Event { return remove(evs, members) },
			})
		}
		return out
	},
}

var swapAttempts = Family{
	Name:        "swap-attempts",
	Description: "exchanges the addresses of two connection attempts to different addresses: the client tried them in the other order",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		as := attemptsOf(evs)
		for i := range as {
			for j := i + 1; j < len(as); j++ {
				ai, aj := as[i], as[j]
				x, y := evs[ai.syn].Addr, evs[aj.syn].Addr
				if x == y {
					continue
				}
				out = append(out, Mutation{
					ID: fmt.Sprintf("swap-attempts[%d,%d]", i+1, j+1),
					Description: fmt.Sprintf("exchanges the addresses of %s and the %s (SYN to %s %s)",
						describeAttempt(evs, i, ai), ordinal(j+1), y, at(evs[aj.syn].T)),
					edit: func(evs []trace.Event) []trace.Event {
						for _, k := range ai.members {
							evs[k].Addr = y
						}
						for _, k := range aj.members {
							evs[k].Addr = x
						}
						return evs
					},
				})
			}
		}
		return out
	},
}

// repeats are how long after an attempt repeatAttempt makes it again.
var repeats = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

var repeatAttempt = Family{
	Name:        "repeat-attempt",
	Description: "makes one connection attempt again, with the same answer, a little later: a retry the client should not have made",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		ports := maxPort(evs)
		for k, a := range attemptsOf(evs) {
			for _, d := range repeats {
				members := a.members
				out = append(out, Mutation{
					ID:          fmt.Sprintf("repeat-attempt[%d,%s]", k+1, signed(d)),
					Description: fmt.Sprintf("repeats %s %s", describeAttempt(evs, k, a), later(d)),
					edit: func(evs []trace.Event) []trace.Event {
						last := members[len(members)-1]
						for n, i := range members {
							c := evs[i]
							c.T += d
							if c.Port != 0 {
								c.Port = ports + 1
								c.Peer = ""
							}
							evs = insertAfter(evs, last+n, c)
						}
						return evs
					},
				})
			}
		}
		return out
	},
}

// maxPort is the largest client port a captured packet names.
func maxPort(evs []trace.Event) int {
	p := 0
	for _, e := range evs {
		p = max(p, e.Port)
	}
	return p
}

var addAttempt = Family{
	Name:        "add-attempt",
	Description: "adds a connection attempt (an unanswered SYN) to an address right after something happened: an attempt the client should not have made",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		addrs := attemptedAddrs(evs)
		port := maxPort(evs)
		for _, an := range anchors(evs) {
			for _, addr := range addrs {
				syn := trace.Event{T: an.t + time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: addr}
				if port != 0 {
					syn.Port = port + 1
				}
				after := an.i
				out = append(out, Mutation{
					ID:          fmt.Sprintf("add-attempt[%s,%s]", addr, an.id),
					Description: fmt.Sprintf("adds a connection attempt to %s 1ms after %s", addr, an.what),
					edit:        func(evs []trace.Event) []trace.Event { return insertAfter(evs, after, syn) },
				})
			}
		}
		return out
	},
}

// attemptedAddrs are the addresses the trace's attempts went to, in the
// order of their first attempt, then the other addresses the resolver gave.
func attemptedAddrs(evs []trace.Event) []string {
	var out []string
	add := func(a string) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, e := range evs {
		if isAttempt(e) {
			add(e.Addr)
		}
	}
	for _, e := range evs {
		for _, ep := range e.Endpoints {
			for _, a := range ep {
				add(a)
			}
		}
	}
	return out
}

// anchor is a moment an added event follows: a stimulus of the harness or
// a change the client made.
type anchor struct {
	i    int           // the event's index
	t    time.Duration // its time
	id   string        // for mutation IDs: "resolver-update#2"
	what string        // for descriptions
}

// anchorKinds are the events an added event may follow: the harness's
// stimuli, the channel's states, the failures of connections.
var anchorKinds = []trace.Kind{
	trace.KindResolverUpdate, trace.KindFaultSet, trace.KindFaultClear, trace.KindBackendDown, trace.KindBackendUp,
	trace.KindConfigUpdate, trace.KindRPCStart, trace.KindRST, trace.KindBalancerState, trace.KindChannelState,
}

// anchors lists the events of anchorKinds, each kind numbered on its own.
// Among the policy's states only the root's count.
func anchors(evs []trace.Event) []anchor {
	var out []anchor
	n := map[trace.Kind]int{}
	for i, e := range evs {
		if !slices.Contains(anchorKinds, e.Kind) || (e.Kind == trace.KindBalancerState && e.Policy != "") {
			continue
		}
		n[e.Kind]++
		what := fmt.Sprintf("the %s %s (%s)", ordinal(n[e.Kind]), e.Kind, joinSet(at(e.T), e.Addr, e.State, e.RPC))
		out = append(out, anchor{i: i, t: e.T, id: fmt.Sprintf("%s#%d", e.Kind, n[e.Kind]), what: what})
	}
	return out
}

var retargetAttempt = Family{
	Name:        "retarget-attempt",
	Description: "sends one connection attempt (its SYN and what answered it) to another address the client knew",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		addrs := attemptedAddrs(evs)
		for k, a := range attemptsOf(evs) {
			for _, addr := range addrs {
				if addr == evs[a.syn].Addr {
					continue
				}
				members := a.members
				out = append(out, Mutation{
					ID:          fmt.Sprintf("retarget-attempt[%d,%s]", k+1, addr),
					Description: fmt.Sprintf("sends %s to %s instead", describeAttempt(evs, k, a), addr),
					edit: func(evs []trace.Event) []trace.Event {
						for _, i := range members {
							evs[i].Addr = addr
						}
						return evs
					},
				})
			}
		}
		return out
	},
}

// joinSet joins the non-empty ones of ss with spaces.
func joinSet(ss ...string) string {
	out := ""
	for _, s := range ss {
		if s != "" {
			if out != "" {
				out += " "
			}
			out += s
		}
	}
	return out
}
