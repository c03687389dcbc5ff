// Package report holds every format conform reports verdicts in: the text
// table of `conform run` (requirement → verdict per mode) and the matrix of
// `conform verify` (requirement × implementation), each with its evidence
// and totals; their JSON documents; JUnit XML; the progress line printed as
// each run finishes; and the HTML page (harness/report/html).
//
// Formats are data: the package takes runs that have happened and imports
// the trace, requirement and verdict formats, never a runner or a driver.
package report

import (
	"sort"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// Run is one run of one spec in one mode, as the reports show it: what was
// judged (the spec, its document, the mode), the trace it was judged on and
// the verdicts.
type Run struct {
	verdict.Subject
	Impl    string        // the implementation that ran, "reference" for conform run
	Took    time.Duration // the run's wall time
	Trace   *trace.Trace  // nil when the run broke before producing one
	Golden  *trace.Trace  // the golden trace, for the HTML timelines; nil when there is none
	Results []verdict.Result
}

// rank orders verdicts for worst: error beats fail beats inconclusive beats
// pass beats not-applicable.
var rank = map[verdict.Verdict]int{verdict.NotApplicable: 0, verdict.Pass: 1, verdict.Inconclusive: 2, verdict.Fail: 3, verdict.Error: 4}

// worst folds several results into one: the first of the worst verdict
// (rank). It is the zero Result for no results.
func worst(rs []verdict.Result) verdict.Result {
	var w verdict.Result
	for i, r := range rs {
		if i == 0 || rank[r.Verdict] > rank[w.Verdict] {
			w = r
		}
	}
	return w
}

// grid is requirement × column → results: the run table's columns are
// modes, the verify matrix's implementations.
type grid struct {
	rows []string                               // requirement IDs, sorted by document then ID
	cell map[string]map[string][]verdict.Result // requirement → column → results
}

func newGrid() *grid { return &grid{cell: map[string]map[string][]verdict.Result{}} }

// add files rs under column col, adding a row for each new requirement.
func (g *grid) add(col string, rs []verdict.Result) {
	for _, r := range rs {
		if g.cell[r.Requirement] == nil {
			g.cell[r.Requirement] = map[string][]verdict.Result{}
			g.rows = append(g.rows, r.Requirement)
		}
		g.cell[r.Requirement][col] = append(g.cell[r.Requirement][col], r)
	}
}

// sort orders the rows: IDs start with their document, so by document then ID.
func (g *grid) sort() { sort.Strings(g.rows) }

// verdict is the cell's one verdict, "" for an empty cell.
func (g *grid) verdict(id, col string) verdict.Verdict { return worst(g.cell[id][col]).Verdict }

// label is the cell as the text reports print it: its one verdict, a fail
// with its kind ("fail (absent)"), "-" for an empty cell.
func (g *grid) label(id, col string) string {
	w := worst(g.cell[id][col])
	if w.Verdict == "" {
		return "-"
	}
	return w.Label()
}

// clip shortens s to n columns (s is ASCII: IDs, catalogue text, impl
// names), the last an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// clipMiddle shortens s to n columns keeping its start and its end, an
// ellipsis between: implementation names that share a start ("go:./acme
// [pick_first=acme]" and "go:./acme [pick_first=acme] (sim)") stay told
// apart by their ends.
func clipMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := (n - 1) / 2
	return s[:head] + "…" + s[len(s)-(n-1-head):]
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
