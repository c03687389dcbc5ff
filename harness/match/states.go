package match

import (
	"fmt"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/trace"
	"github.com/onsi/gomega/types"
)

const (
	transientFailure = "TRANSIENT_FAILURE"
	ready            = "READY"
)

// stateEvents finds the events that carry the channel's state, collapsed:
// the driver's channel-state events when the trace has any (lab), else the
// root policy's balancer-state events (simulator), each kept only when its
// state differs from the one before. It returns their indices in evs, the
// predicate that selects them, uncollapsed, and the kind used.
func stateEvents(evs []trace.Event) (collapsed []int, keep func(trace.Event) bool, what string) {
	keep = func(e trace.Event) bool { return e.Kind == trace.KindBalancerState && e.Policy == "" }
	what = "balancer-state"
	if slices.ContainsFunc(evs, func(e trace.Event) bool { return e.Kind == trace.KindChannelState }) {
		keep = func(e trace.Event) bool { return e.Kind == trace.KindChannelState }
		what = "channel-state"
	}
	for i, e := range evs {
		if keep(e) && (len(collapsed) == 0 || evs[collapsed[len(collapsed)-1]].State != e.State) {
			collapsed = append(collapsed, i)
		}
	}
	return collapsed, keep, what
}

// states are the states of evs at indices idx.
func states(evs []trace.Event, idx []int) []string {
	ss := make([]string, len(idx))
	for k, i := range idx {
		ss[k] = evs[i].State
	}
	return ss
}

// collapse drops consecutive duplicates from ss.
func collapse(ss []string) []string {
	return slices.Compact(slices.Clone(ss))
}

// HaveStateSequence succeeds when the channel's states, consecutive
// duplicates collapsed, are exactly states (also collapsed): the driver's
// channel-state events when the trace has any, else the root policy's
// balancer-state events.
func HaveStateSequence(states ...string) types.GomegaMatcher {
	return &stateSequence{want: collapse(states)}
}

type stateSequence struct {
	want []string
	evs  []trace.Event
	got  []int // indices of the collapsed states in evs
	keep func(trace.Event) bool
	what string
}

func (m *stateSequence) Match(actual any) (bool, error) {
	evs, err := events("HaveStateSequence", actual)
	if err != nil {
		return false, err
	}
	m.evs = evs
	m.got, m.keep, m.what = stateEvents(evs)
	return slices.Equal(states(m.evs, m.got), m.want), nil
}

func (m *stateSequence) FailureMessage(any) string {
	got := states(m.evs, m.got)
	i := firstDifference(got, m.want)
	var b strings.Builder
	fmt.Fprintf(&b, "Expected the %s sequence\n    %s\nbut got\n    %s\n", m.what, list(m.want), list(got))
	fmt.Fprintf(&b, "First difference at state %d: want %s, got %s.\n", i+1, at(m.want, i), at(got, i))
	fmt.Fprintf(&b, "The %s events there:\n", m.what)
	b.WriteString(excerpt(m.evs, m.keep, m.failureIndex(i)))
	return b.String()
}

func (m *stateSequence) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected the %s sequence not to be\n    %s\nbut it was.\n", m.what, list(m.want))
}

// failureIndex is where the i-th collapsed state is in the trace, or,
// past the last, the end of the trace.
func (m *stateSequence) failureIndex(i int) int {
	if i < len(m.got) {
		return m.got[i]
	}
	return len(m.evs)
}

// StayInTransientFailureUntilReady succeeds when, every time the channel
// reports TRANSIENT_FAILURE, the next different state it reports is READY
// (or none): sticky TRANSIENT_FAILURE (A62). States as HaveStateSequence
// finds them. A trace that never reports TRANSIENT_FAILURE fails: it does
// not exercise the rule.
func StayInTransientFailureUntilReady() types.GomegaMatcher {
	return &stickyTF{}
}

type stickyTF struct {
	evs    []trace.Event
	keep   func(trace.Event) bool
	what   string
	sawTF  bool
	breach int   // index in got of the state that left TF for not READY; -1 none
	got    []int // indices of the collapsed states in evs
}

func (m *stickyTF) Match(actual any) (bool, error) {
	evs, err := events("StayInTransientFailureUntilReady", actual)
	if err != nil {
		return false, err
	}
	m.evs = evs
	m.got, m.keep, m.what = stateEvents(evs)
	m.sawTF, m.breach = false, -1
	ss := states(evs, m.got)
	for i, s := range ss {
		m.sawTF = m.sawTF || s == transientFailure
		if i > 0 && ss[i-1] == transientFailure && s != ready {
			m.breach = i
			break
		}
	}
	return m.sawTF && m.breach < 0, nil
}

func (m *stickyTF) FailureMessage(any) string {
	var b strings.Builder
	if !m.sawTF {
		fmt.Fprintf(&b, "Expected TRANSIENT_FAILURE to last until READY, but the trace never reports "+
			"TRANSIENT_FAILURE (%s: %s), so it does not exercise the rule.\n", m.what, list(states(m.evs, m.got)))
		return b.String()
	}
	tf, left := m.evs[m.got[m.breach-1]], m.evs[m.got[m.breach]]
	fmt.Fprintf(&b, "Expected TRANSIENT_FAILURE (reported at %s) to last until READY,\n", trace.FormatT(tf.T))
	fmt.Fprintf(&b, "but the channel reported %s at %s (%s: %s).\n",
		left.State, trace.FormatT(left.T), m.what, list(states(m.evs, m.got)))
	fmt.Fprintf(&b, "The %s events there:\n", m.what)
	b.WriteString(excerpt(m.evs, m.keep, m.got[m.breach]))
	return b.String()
}

func (m *stickyTF) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected TRANSIENT_FAILURE to give way to a state other than READY, but it never did (%s: %s).\n",
		m.what, list(states(m.evs, m.got)))
}
