package match

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/conformlab/conform/harness/trace"
	"github.com/onsi/gomega/types"
)

// shownPicks is how many picks a failure message lists.
const shownPicks = 8

// HavePickDistribution succeeds when the fraction of successful picks that
// went to each key of want is want[key] ± tolerance, and every target want
// does not name got at most tolerance. A key names a target by address
// ("198.18.0.10:443") or by backend (the backend that answered the RPC);
// a trace with no successful pick fails.
func HavePickDistribution(want map[string]float64, tolerance float64) types.GomegaMatcher {
	return &pickDistribution{want: want, tolerance: tolerance}
}

type pickDistribution struct {
	want      map[string]float64
	tolerance float64
	picks     []trace.Event
	rows      []share
}

// share is one target's fraction of the picks.
type share struct {
	target    string
	want, got float64
	picks     int
	off       bool
}

func (m *pickDistribution) Match(actual any) (bool, error) {
	evs, err := events("HavePickDistribution", actual)
	if err != nil {
		return false, err
	}
	m.picks = trace.Select(evs, func(e trace.Event) bool { return e.Kind == trace.KindPick && e.Addr != "" })
	m.rows = m.shares(m.count(evs))
	return len(m.picks) > 0 && !slices.ContainsFunc(m.rows, func(s share) bool { return s.off }), nil
}

// count counts the picks per target: the first key of want (in sorted
// order) that names the pick's address or backend, else the address.
func (m *pickDistribution) count(evs []trace.Event) map[string]int {
	backendOf := backends(evs)
	keys := sortedKeys(m.want)
	counts := map[string]int{}
	for _, p := range m.picks {
		target := p.Addr
		for _, k := range keys {
			if k == p.Addr || k == backendOf(p) {
				target = k
				break
			}
		}
		counts[target]++
	}
	return counts
}

// backends says which backend a pick went to: the one that answered its
// RPC or, for an RPC not answered, the one that answered another RPC
// picked to the same address.
func backends(evs []trace.Event) func(trace.Event) string {
	byRPC, byAddr := map[string]string{}, map[string]string{}
	for _, e := range evs {
		if e.Kind == trace.KindRPCResult && e.Backend != "" {
			byRPC[e.RPC] = e.Backend
		}
	}
	for _, e := range evs {
		if b := byRPC[e.RPC]; e.Kind == trace.KindPick && e.Addr != "" && b != "" {
			byAddr[e.Addr] = b
		}
	}
	return func(p trace.Event) string {
		if b, ok := byRPC[p.RPC]; ok {
			return b
		}
		return byAddr[p.Addr]
	}
}

// shares is one row per key of want and per other target picked, sorted.
func (m *pickDistribution) shares(counts map[string]int) []share {
	targets := sortedKeys(m.want)
	for t := range counts {
		if _, ok := m.want[t]; !ok {
			targets = append(targets, t)
		}
	}
	sort.Strings(targets)
	rows := make([]share, len(targets))
	for i, t := range targets {
		got := 0.0
		if len(m.picks) > 0 {
			got = float64(counts[t]) / float64(len(m.picks))
		}
		rows[i] = share{t, m.want[t], got, counts[t], math.Abs(got-m.want[t]) > m.tolerance}
	}
	return rows
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (m *pickDistribution) FailureMessage(any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Expected the picks distributed within ±%.3f as wanted, over %d successful picks:\n",
		m.tolerance, len(m.picks))
	b.WriteString(m.table())
	b.WriteString(m.firstPicks())
	return b.String()
}

func (m *pickDistribution) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected the picks not distributed within ±%.3f as wanted, but they were, over %d picks:\n%s",
		m.tolerance, len(m.picks), m.table())
}

// table renders the rows in aligned columns, the ones off marked.
func (m *pickDistribution) table() string {
	width := len("target")
	for _, r := range m.rows {
		width = max(width, len(r.target))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "    %-*s  %6s  %6s  %6s\n", width, "target", "want", "got", "picks")
	for _, r := range m.rows {
		fmt.Fprintf(&b, "    %-*s  %6.3f  %6.3f  %6d%s\n", width, r.target, r.want, r.got, r.picks, offMark(r.off))
	}
	return b.String()
}

func offMark(off bool) string {
	if off {
		return "  <- off"
	}
	return ""
}

// firstPicks lists the first successful picks, or says there were none.
func (m *pickDistribution) firstPicks() string {
	if len(m.picks) == 0 {
		return "The trace has no successful pick.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The first picks (of %d):\n", len(m.picks))
	for _, p := range m.picks[:min(shownPicks, len(m.picks))] {
		fmt.Fprintf(&b, "    %s\n", p)
	}
	return b.String()
}
