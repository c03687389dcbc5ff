package mutate

import (
	"fmt"
	"slices"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// The channel's states, as the two views of a trace show them: the root
// policy's balancer-state events (the policy's own view) and the driver's
// channel-state events (any implementation's). A state mutation changes the
// first view the trace has and, where the trace has both and they show the
// same sequence of states, the other alike, so that the trace tells one
// story.

var connectivityStates = []string{"IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE"}

func isRootState(e trace.Event) bool {
	return e.Kind == trace.KindBalancerState && e.Policy == ""
}

func isChannelState(e trace.Event) bool { return e.Kind == trace.KindChannelState }

// stateRuns groups the events of one view into runs of one state: each run
// is a change of state and its repetitions, in time order. Channel-state
// SHUTDOWN (the run closing the channel) is no state of the policy's and is
// left out.
func stateRuns(evs []trace.Event, view func(trace.Event) bool) [][]int {
	var runs [][]int
	for i, e := range evs {
		if !view(e) || e.State == "SHUTDOWN" {
			continue
		}
		if n := len(runs); n > 0 && evs[runs[n-1][0]].State == e.State {
			runs[n-1] = append(runs[n-1], i)
			continue
		}
		runs = append(runs, []int{i})
	}
	return runs
}

func runStates(evs []trace.Event, runs [][]int) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = evs[r[0]].State
	}
	return out
}

// stateViews are the runs of each view the trace has, the primary first:
// the root policy's when the trace has them, and the driver's too when they
// show the same states.
func stateViews(evs []trace.Event) [][][]int {
	root, channel := stateRuns(evs, isRootState), stateRuns(evs, isChannelState)
	switch {
	case len(root) == 0 && len(channel) == 0:
		return nil
	case len(root) == 0:
		return [][][]int{channel}
	case len(channel) > 0 && slices.Equal(runStates(evs, root), runStates(evs, channel)):
		return [][][]int{root, channel}
	}
	return [][][]int{root}
}

func describeRun(evs []trace.Event, k int, run []int) string {
	e := evs[run[0]]
	return fmt.Sprintf("the %s state the channel reported (%s %s)", ordinal(k+1), e.State, at(e.T))
}

var insertState = Family{
	Name:        "insert-state",
	Description: "inserts a channel state between two the channel reported (or after the last): a state change the client should not have made",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		views := stateViews(evs)
		if views == nil {
			return nil
		}
		primary := views[0]
		var out []Mutation
		for k := range primary {
			prev := evs[primary[k][0]].State
			next := ""
			if k+1 < len(primary) {
				next = evs[primary[k+1][0]].State
			}
			for _, st := range connectivityStates {
				if st == prev || st == next {
					continue
				}
				where := "after " + describeRun(evs, k, primary[k])
				if next != "" {
					where = fmt.Sprintf("between %s and the next (%s)", describeRun(evs, k, primary[k]), next)
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("insert-state[%d,%s]", k+1, st),
					Description: fmt.Sprintf("inserts %s %s", st, where),
					edit: func(evs []trace.Event) []trace.Event {
						// One view after the other, each insertion moving
						// the indices after it.
						vs := views
						for v := len(vs) - 1; v >= 0; v-- {
							runs := vs[v]
							last := runs[k][len(runs[k])-1]
							t := evs[last].T + 10*time.Millisecond
							if k+1 < len(runs) {
								t = (evs[last].T + evs[runs[k+1][0]].T) / 2
							}
							e := evs[last]
							e.T, e.State, e.Err = t, st, ""
							evs = insertAfter(evs, last, e)
							vs = shiftIndices(vs, last)
						}
						return evs
					},
				})
			}
		}
		return out
	},
}

// shiftIndices returns views with every index after i moved up by one (an
// event was inserted after i).
func shiftIndices(views [][][]int, i int) [][][]int {
	out := make([][][]int, len(views))
	for v, runs := range views {
		out[v] = make([][]int, len(runs))
		for r, run := range runs {
			out[v][r] = make([]int, len(run))
			for n, j := range run {
				if j > i {
					j++
				}
				out[v][r][n] = j
			}
		}
	}
	return out
}

var dropState = Family{
	Name:        "drop-state",
	Description: "removes one state the channel reported (with its repetitions): a state change the client did not make",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		views := stateViews(evs)
		if views == nil {
			return nil
		}
		var out []Mutation
		for k, run := range views[0] {
			out = append(out, Mutation{
				ID:          fmt.Sprintf("drop-state[%d]", k+1),
				Description: "removes " + describeRun(evs, k, run),
				edit: func(evs []trace.Event) []trace.Event {
					var drop []int
					for _, runs := range views {
						drop = append(drop, runs[k]...)
					}
					return remove(evs, drop)
				},
			})
		}
		return out
	},
}

var replaceState = Family{
	Name:        "replace-state",
	Description: "changes one state the channel reported into another",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		views := stateViews(evs)
		if views == nil {
			return nil
		}
		var out []Mutation
		for k, run := range views[0] {
			for _, st := range connectivityStates {
				if st == evs[run[0]].State {
					continue
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("replace-state[%d,%s]", k+1, st),
					Description: fmt.Sprintf("reports %s instead of %s", st, describeRun(evs, k, run)),
					edit: func(evs []trace.Event) []trace.Event {
						for _, runs := range views {
							for _, i := range runs[k] {
								evs[i].State = st
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

var shiftState = Family{
	Name:        "shift-state",
	Description: "moves one state the channel reported (with its repetitions) in time",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		views := stateViews(evs)
		if views == nil {
			return nil
		}
		var out []Mutation
		for k, run := range views[0] {
			for _, d := range shifts {
				if evs[run[0]].T+d < 0 {
					continue
				}
				out = append(out, Mutation{
					ID:          fmt.Sprintf("shift-state[%d,%s]", k+1, signed(d)),
					Description: fmt.Sprintf("moves %s %s", describeRun(evs, k, run), later(d)),
					edit: func(evs []trace.Event) []trace.Event {
						for _, runs := range views {
							for _, i := range runs[k] {
								evs[i].T += d
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

var hurryState = Family{
	Name:        "hurry-state",
	Description: "reports one state the channel reported earlier, half-way from the state before it",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		views := stateViews(evs)
		if views == nil {
			return nil
		}
		var out []Mutation
		for k := 1; k < len(views[0]); k++ {
			run, prev := views[0][k], views[0][k-1]
			if evs[run[0]].T-evs[prev[len(prev)-1]].T < 2 {
				continue
			}
			out = append(out, Mutation{
				ID:          fmt.Sprintf("hurry-state[%d]", k+1),
				Description: fmt.Sprintf("reports %s half-way from the one before (%s)", describeRun(evs, k, run), evs[prev[0]].State),
				edit: func(evs []trace.Event) []trace.Event {
					for _, runs := range views {
						if k < len(runs) {
							p := runs[k-1]
							i := runs[k][0]
							evs[i].T = (evs[p[len(p)-1]].T + evs[i].T) / 2
						}
					}
					return evs
				},
			})
		}
		return out
	},
}

// ownChannelRuns are the runs of the driver's channel-state view when the
// trace also has the root policy's view and the two differ: the states the
// channel took on its own (IDLE after its idle timeout, which no policy
// reports), which the state families, mutating the policy's view, leave
// alone. Nil otherwise.
func ownChannelRuns(evs []trace.Event) [][]int {
	root, channel := stateRuns(evs, isRootState), stateRuns(evs, isChannelState)
	if len(root) == 0 || len(channel) == 0 || slices.Equal(runStates(evs, root), runStates(evs, channel)) {
		return nil
	}
	return channel
}

var dropChannelState = Family{
	Name:        "drop-channel-state",
	Description: "removes one state the channel reported on its own, besides its policy's (with its repetitions): a change of the channel's state, an idle timeout's IDLE say, that did not happen",
	candidates: func(tr *trace.Trace) []Mutation {
		evs := tr.Events
		runs := ownChannelRuns(evs)
		var out []Mutation
		for k, run := range runs {
			out = append(out, Mutation{
				ID:          fmt.Sprintf("drop-channel-state[%d]", k+1),
				Description: "removes " + describeRun(evs, k, run) + " as a channel-state",
				edit:        func(evs []trace.Event) []trace.Event { return remove(evs, run) },
			})
		}
		return out
	},
}
