package mutate

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Addresses, timers, and the generic edits of one event of the policy, the
// capture or the backends.

var swapAddrs = Family{
	Name:        "swap-addrs",
	Description: "exchanges two addresses in everything the client and its policy did (attempts, subchannels, picks): it used each where it used the other",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		addrs := attemptedAddrs(evs)
		for i, x := range addrs {
			for _, y := range addrs[i+1:] {
				out = append(out, Mutation{
					ID:          fmt.Sprintf("swap-addrs[%s,%s]", x, y),
					Description: fmt.Sprintf("exchanges %s and %s in the capture's and the policy's events", x, y),
					edit: func(evs []trace.Event) []trace.Event {
						swap := func(a string) string {
							switch a {
							case x:
								return y
							case y:
								return x
							}
							return a
						}
						for k := range evs {
							e := &evs[k]
							if e.Source != trace.SourceCapture && e.Source != trace.SourcePolicy {
								continue
							}
							e.Addr = swap(e.Addr)
							for n := range e.Addrs {
								e.Addrs[n] = swap(e.Addrs[n])
							}
							for n := range e.SessionAddrs {
								e.SessionAddrs[n] = swap(e.SessionAddrs[n])
							}
						}
						return evs
					},
				})
			}
		}
		return out
	},
}

func isTimer(k trace.Kind) func(trace.Event) bool {
	return func(e trace.Event) bool { return e.Kind == k }
}

func describeTimer(evs []trace.Event, k, i int) string {
	e := evs[i]
	return fmt.Sprintf("the %s %s (%q timer %d %s)", ordinal(k+1), e.Kind, e.Timer, e.TimerID, at(e.T))
}

var timerStopToFire = Family{
	Name:        "timer-stop-to-fire",
	Description: "lets a timer the policy stopped fire instead",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isTimer(trace.KindTimerStop)) {
			out = append(out, Mutation{
				ID:          fmt.Sprintf("timer-stop-to-fire[%d]", k+1),
				Description: fmt.Sprintf("turns %s into a timer-fire", describeTimer(evs, k, i)),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Kind = trace.KindTimerFire
					return evs
				},
			})
		}
		return out
	},
}

var timerFireToStop = Family{
	Name:        "timer-fire-to-stop",
	Description: "stops a timer that fired instead",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isTimer(trace.KindTimerFire)) {
			out = append(out, Mutation{
				ID:          fmt.Sprintf("timer-fire-to-stop[%d]", k+1),
				Description: fmt.Sprintf("turns %s into a timer-stop", describeTimer(evs, k, i)),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Kind = trace.KindTimerStop
					return evs
				},
			})
		}
		return out
	},
}

var timerDuration = Family{
	Name:        "timer-duration",
	Description: "halves the duration a timer was started with",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for k, i := range indicesOf(evs, isTimer(trace.KindTimerStart)) {
			if evs[i].Duration <= 0 {
				continue
			}
			half := evs[i].Duration / 2
			out = append(out, Mutation{
				ID:          fmt.Sprintf("timer-duration[%d,%s]", k+1, half),
				Description: fmt.Sprintf("starts %s for %s instead of %s", describeTimer(evs, k, i), half, evs[i].Duration),
				edit: func(evs []trace.Event) []trace.Event {
					evs[i].Duration = half
					return evs
				},
			})
		}
		return out
	},
}

// editable are the kinds the generic families edit one event of: what the
// policy did with subchannels and timers and picks, and what the capture
// and the backends saw of connections. Attempts (SYNs), states, re-resolution,
// xDS answers and RPC results have families of their own.
var editable = []trace.Kind{
	trace.KindSubchannelNew, trace.KindSubchannelConnect, trace.KindSubchannelState, trace.KindSubchannelShutdown,
	trace.KindSubchannelHealth, trace.KindTimerStart, trace.KindTimerFire, trace.KindTimerStop, trace.KindPick,
	trace.KindSYNACK, trace.KindRST, trace.KindAccept, trace.KindRPCServed, trace.KindConnClose,
}

// numbered lists, for each event of an editable kind, its index and its
// place among its kind ("pick#3").
type numberedEvent struct {
	i  int
	id string
}

func editableEvents(evs []trace.Event) []numberedEvent {
	var out []numberedEvent
	n := map[trace.Kind]int{}
	for i, e := range evs {
		if !slices.Contains(editable, e.Kind) {
			continue
		}
		n[e.Kind]++
		out = append(out, numberedEvent{i: i, id: fmt.Sprintf("%s#%d", e.Kind, n[e.Kind])})
	}
	return out
}

var shiftEvent = Family{
	Name:        "shift-event",
	Description: "moves one event of the policy, the capture or a backend in time",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, ne := range editableEvents(evs) {
			for _, d := range shifts {
				if evs[ne.i].T+d < 0 {
					continue
				}
				i := ne.i
				out = append(out, Mutation{
					ID:          fmt.Sprintf("shift-event[%s,%s]", ne.id, signed(d)),
					Description: fmt.Sprintf("moves the %s (%s) %s", ne.id, evs[i].String(), later(d)),
					edit: func(evs []trace.Event) []trace.Event {
						evs[i].T += d
						return evs
					},
				})
			}
		}
		return out
	},
}

var dropEvent = Family{
	Name:        "drop-event",
	Description: "removes one event of the policy, the capture or a backend",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		for _, ne := range editableEvents(evs) {
			i := ne.i
			out = append(out, Mutation{
				ID:          fmt.Sprintf("drop-event[%s]", ne.id),
				Description: fmt.Sprintf("removes the %s (%s)", ne.id, evs[i].String()),
				edit:        func(evs []trace.Event) []trace.Event { return remove(evs, []int{i}) },
			})
		}
		return out
	},
}

// copyDelay is how long after an event copyEvent repeats it.
const copyDelay = 100 * time.Millisecond

var copyEvent = Family{
	Name:        "copy-event",
	Description: "repeats one event of the policy, the capture or a backend a little later (a new subchannel under a new id)",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		fresh := freshSubchannel(evs)
		for _, ne := range editableEvents(evs) {
			i := ne.i
			out = append(out, Mutation{
				ID:          fmt.Sprintf("copy-event[%s,%s]", ne.id, signed(copyDelay)),
				Description: fmt.Sprintf("repeats the %s (%s) %s later", ne.id, evs[i].String(), copyDelay),
				edit: func(evs []trace.Event) []trace.Event {
					c := evs[i]
					c.T += copyDelay
					if c.Kind == trace.KindSubchannelNew {
						c.Subchannel = fresh
					}
					return insertAfter(evs, i, c)
				},
			})
		}
		return out
	},
}

// freshSubchannel is a subchannel id the trace does not use: "sc<n>" past
// the largest n it uses.
func freshSubchannel(evs []trace.Event) string {
	n := 0
	for _, e := range evs {
		if v, ok := strings.CutPrefix(e.Subchannel, "sc"); ok {
			if k, err := strconv.Atoi(v); err == nil {
				n = max(n, k)
			}
		}
	}
	return "sc" + strconv.Itoa(n+1)
}

var watchHealth = Family{
	Name:        "watch-health",
	Description: "has a health watch start on a subchannel as it turns READY, reporting the health its address serves then",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		var out []Mutation
		served := map[string]string{} // address → the state of its last health-set
		n := 0
		for i, e := range evs {
			if e.Kind == trace.KindHealthSet {
				served[e.Addr] = e.State
			}
			if e.Kind != trace.KindSubchannelState {
				continue
			}
			n++
			if e.State != "READY" || e.Addr == "" || slices.ContainsFunc(evs, func(h trace.Event) bool {
				return h.Kind == trace.KindSubchannelHealth && h.Subchannel == e.Subchannel
			}) {
				continue
			}
			health := cmp.Or(served[e.Addr], "READY")
			out = append(out, Mutation{
				ID:          fmt.Sprintf("watch-health[subchannel-state#%d]", n),
				Description: fmt.Sprintf("starts a health watch on %s as it turns READY %s, reporting %s", e.Subchannel, at(e.T), health),
				edit: func(evs []trace.Event) []trace.Event {
					h := trace.Event{T: evs[i].T, Source: trace.SourcePolicy, Kind: trace.KindSubchannelHealth,
						Subchannel: evs[i].Subchannel, Addr: evs[i].Addr, State: health}
					return insertAfter(evs, i, h)
				},
			})
		}
		return out
	},
}
