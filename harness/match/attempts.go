package match

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/onsi/gomega/types"
)

// attempt is the first connection attempt to one address.
type attempt struct {
	addr string
	ev   trace.Event
	i    int // its index in the trace
}

// firstAttempts lists the first connection attempt to each address, in
// order. A trace with captured SYNs says it best: the first SYN to each
// address. Without them, a subchannel-connect attempts its subchannel's
// first address (the others only after it fails, which policy events do
// not show).
func firstAttempts(evs []trace.Event) (as []attempt, from string) {
	if slices.ContainsFunc(evs, isSYN) {
		return firstPer(evs, isSYN, func(e trace.Event) string { return e.Addr }), "captured SYNs"
	}
	addrs := subchannelAddrs(evs)
	connects := func(e trace.Event) bool { return e.Kind == trace.KindSubchannelConnect }
	first := func(e trace.Event) string {
		if a := addrs[e.Subchannel]; len(a) > 0 {
			return a[0]
		}
		return ""
	}
	return firstPer(evs, connects, first), "subchannel-connect events"
}

func isSYN(e trace.Event) bool { return e.Kind == trace.KindSYN }

// firstPer lists, for the events where is holds, the first per address.
func firstPer(evs []trace.Event, is func(trace.Event) bool, addrOf func(trace.Event) string) []attempt {
	var as []attempt
	seen := map[string]bool{}
	for i, e := range evs {
		a := addrOf(e)
		if is(e) && a != "" && !seen[a] {
			seen[a] = true
			as = append(as, attempt{a, e, i})
		}
	}
	return as
}

// subchannelAddrs is each subchannel's address list at its creation
// (subchannel-new). A policy that later updates a subchannel's list
// (subchannel-addresses) has already connected it to the first one.
func subchannelAddrs(evs []trace.Event) map[string][]string {
	m := map[string][]string{}
	for _, e := range evs {
		if e.Kind == trace.KindSubchannelNew && len(e.Addrs) > 0 {
			if _, ok := m[e.Subchannel]; !ok {
				m[e.Subchannel] = e.Addrs
			}
		}
	}
	return m
}

// aboutAddrs selects the events that concern any of addrs: they name one,
// or their subchannel's addresses include one.
func aboutAddrs(evs []trace.Event, addrs ...string) func(trace.Event) bool {
	scs := subchannelAddrs(evs)
	hit := func(list []string) bool {
		return slices.ContainsFunc(list, func(a string) bool { return slices.Contains(addrs, a) })
	}
	return func(e trace.Event) bool {
		return slices.Contains(addrs, e.Addr) || hit(e.Addrs) || (e.Subchannel != "" && hit(scs[e.Subchannel]))
	}
}

// HaveAttemptOrder succeeds when the first connection attempts of the trace
// go to exactly addrs, in that order: the addresses in the order of their
// first SYN (or, in a trace without captured packets, of the first
// subchannel-connect of a subchannel whose first address they are). Narrow
// the trace first (trace.Window) to look at part of a run.
func HaveAttemptOrder(addrs ...string) types.GomegaMatcher {
	return &attemptOrder{want: addrs}
}

type attemptOrder struct {
	want []string
	evs  []trace.Event
	got  []attempt
	from string
}

func (m *attemptOrder) Match(actual any) (bool, error) {
	evs, err := events("HaveAttemptOrder", actual)
	if err != nil {
		return false, err
	}
	m.evs = evs
	m.got, m.from = firstAttempts(evs)
	return slices.Equal(m.gotAddrs(), m.want), nil
}

func (m *attemptOrder) gotAddrs() []string {
	addrs := make([]string, len(m.got))
	for i, a := range m.got {
		addrs[i] = a.addr
	}
	return addrs
}

func (m *attemptOrder) FailureMessage(any) string {
	got := m.gotAddrs()
	i := firstDifference(got, m.want)
	var b strings.Builder
	fmt.Fprintf(&b, "Expected first connection attempts to\n    %s\nbut they went to (by %s)\n    %s\n",
		list(m.want), m.from, list(got))
	fmt.Fprintf(&b, "First difference at attempt %d: want %s, got %s.\n", i+1, at(m.want, i), at(got, i))
	involved := slices.DeleteFunc([]string{at(m.want, i), at(got, i)}, func(s string) bool { return s == "nothing" })
	fmt.Fprintf(&b, "Events about %s:\n", list(involved))
	b.WriteString(excerpt(m.evs, aboutAddrs(m.evs, involved...), m.failureIndex(i)))
	return b.String()
}

// failureIndex is where the i-th attempt is in the trace, or the end.
func (m *attemptOrder) failureIndex(i int) int {
	if i < len(m.got) {
		return m.got[i].i
	}
	return len(m.evs)
}

func (m *attemptOrder) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected first connection attempts not to go to\n    %s\nin that order, but they did (by %s):\n%s",
		list(m.want), m.from, renderAttempts(m.got))
}

func renderAttempts(as []attempt) string {
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "    %s\n", a.ev)
	}
	return b.String()
}

// HaveGapBetweenAttempts succeeds when the first connection attempt to b
// follows the first to a by want, give or take tolerance (attempts as
// HaveAttemptOrder finds them).
func HaveGapBetweenAttempts(a, b string, want, tolerance time.Duration) types.GomegaMatcher {
	return &attemptGap{a: a, b: b, want: want, tolerance: tolerance}
}

type attemptGap struct {
	a, b            string
	want, tolerance time.Duration
	evs             []trace.Event
	first           map[string]attempt
	from            string
}

func (m *attemptGap) Match(actual any) (bool, error) {
	evs, err := events("HaveGapBetweenAttempts", actual)
	if err != nil {
		return false, err
	}
	m.evs = evs
	as, from := firstAttempts(evs)
	m.from, m.first = from, map[string]attempt{}
	for _, at := range as {
		m.first[at.addr] = at
	}
	gap, ok := m.gap()
	return ok && abs(gap-m.want) <= m.tolerance, nil
}

func (m *attemptGap) gap() (time.Duration, bool) {
	ea, okA := m.first[m.a]
	eb, okB := m.first[m.b]
	return eb.ev.T - ea.ev.T, okA && okB
}

func (m *attemptGap) FailureMessage(any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Expected the first attempt to %s to follow the first to %s by %s ± %s\n",
		m.b, m.a, m.want, m.tolerance)
	gap, ok := m.gap()
	switch {
	case ok:
		fmt.Fprintf(&b, "but it followed by %s (off by %s; by %s).\n", gap, gap-m.want, m.from)
	default:
		fmt.Fprintf(&b, "but %s (by %s).\n", m.absent(), m.from)
	}
	fmt.Fprintf(&b, "Events about %s and %s:\n", m.a, m.b)
	b.WriteString(excerpt(m.evs, aboutAddrs(m.evs, m.a, m.b), m.failureIndex()))
	return b.String()
}

// absent says which attempts the trace lacks.
func (m *attemptGap) absent() string {
	var missing []string
	for _, addr := range []string{m.a, m.b} {
		if _, ok := m.first[addr]; !ok {
			missing = append(missing, addr)
		}
	}
	return "no attempt to " + strings.Join(missing, " nor to ") + " was made"
}

// failureIndex is where the gap ended in the trace, or should have.
func (m *attemptGap) failureIndex() int {
	if eb, ok := m.first[m.b]; ok {
		return eb.i
	}
	if ea, ok := m.first[m.a]; ok {
		return indexAt(m.evs, ea.ev.T+m.want)
	}
	return len(m.evs)
}

func (m *attemptGap) NegatedFailureMessage(any) string {
	gap, _ := m.gap()
	return fmt.Sprintf("Expected the first attempt to %s not to follow the first to %s by %s ± %s, but it followed by %s:\n    %s\n    %s\n",
		m.b, m.a, m.want, m.tolerance, gap, m.first[m.a].ev, m.first[m.b].ev)
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
