package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// Table is what `conform run` found: the reference's runs, shown as one
// verdict per requirement and mode.
type Table struct {
	Runs     []Run
	Disagree map[string]error // spec name → how its simulated and lab traces disagree
	// Unjudged is spec name → why its simulated and lab traces could not
	// be compared (the lab's machine stalled where they diverged): shown,
	// not failed.
	Unjudged map[string]error
	Wall     time.Duration // the wall time of all the runs
	Parallel int           // how many runs ran at once
}

// Pass reports whether every verdict is pass and simulator and lab agree.
func (t Table) Pass() bool {
	if len(t.Disagree) > 0 {
		return false
	}
	for _, r := range t.Runs {
		for _, res := range r.Results {
			if res.Verdict != verdict.Pass {
				return false
			}
		}
	}
	return true
}

// modes are the modes the runs ran in: the table's columns, sim first.
func (t Table) modes() []trace.Mode {
	seen := map[trace.Mode]bool{}
	for _, r := range t.Runs {
		seen[r.Mode] = true
	}
	var out []trace.Mode
	for _, m := range []trace.Mode{trace.ModeSim, trace.ModeLab} {
		if seen[m] {
			out = append(out, m)
		}
	}
	return out
}

func (t Table) grid() *grid {
	g := newGrid()
	for _, r := range t.Runs {
		g.add(string(r.Mode), r.Results)
	}
	g.sort()
	return g
}

// Text prints the table, requirement → verdict per mode with the
// requirement's text, then the totals per mode, the disagreements, the
// evidence of every verdict that is not a pass, and the timing.
func (t Table) Text(w io.Writer) {
	g, modes := t.grid(), t.modes()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-36s", "requirement")
	for _, m := range modes {
		fmt.Fprintf(w, " %-16s", m)
	}
	fmt.Fprintln(w, " text")
	totals := map[trace.Mode]map[verdict.Verdict]int{}
	for _, m := range modes {
		totals[m] = map[verdict.Verdict]int{}
	}
	for _, id := range g.rows {
		fmt.Fprintf(w, "%-36s", id)
		for _, m := range modes {
			if v := g.verdict(id, string(m)); v != "" {
				totals[m][v]++
			}
			fmt.Fprintf(w, " %-16s", g.label(id, string(m)))
		}
		fmt.Fprintln(w, " "+clip(requirementText(id), 60))
	}
	fmt.Fprintln(w)
	for _, m := range modes {
		fmt.Fprintf(w, "%-4s %s\n", m, counts(totals[m]))
	}
	t.printDisagreement(w)
	t.printUnjudged(w)
	t.printEvidence(w)
	t.printTiming(w)
}

// requirementText is the catalogue's statement of requirement id, "" for an
// ID it does not have.
func requirementText(id string) string {
	if req, ok := requirement.ByID(id); ok {
		return req.Text
	}
	return ""
}

// counts says how many of each verdict there are.
func counts(n map[verdict.Verdict]int) string {
	return fmt.Sprintf("%d pass, %d fail, %d inconclusive, %d error, %d not-applicable",
		n[verdict.Pass], n[verdict.Fail], n[verdict.Inconclusive], n[verdict.Error], n[verdict.NotApplicable])
}

func (t Table) printUnjudged(w io.Writer) {
	names := make([]string, 0, len(t.Unjudged))
	for n := range t.Unjudged {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "\nsimulator/lab agreement of %s not judged: %s\n", n, t.Unjudged[n])
	}
}

func (t Table) printDisagreement(w io.Writer) {
	names := make([]string, 0, len(t.Disagree))
	for n := range t.Disagree {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "\nsimulator/lab disagreement in %s:\n%s\n", n, t.Disagree[n])
	}
}

func (t Table) printEvidence(w io.Writer) {
	for _, r := range t.Runs {
		if msg := verdict.Failed(r.Results); msg != "" {
			fmt.Fprintf(w, "\n%s", msg)
		}
	}
}

// printTiming says how long the runs took against what the lab scenarios'
// own timers impose, in plain words (Overhead).
func (t Table) printTiming(w io.Writer) {
	fmt.Fprintf(w, "\n%d runs in %.1fs%s\n", len(t.Runs), t.Wall.Seconds(), Overhead(t.Runs, t.Wall, t.Parallel))
}

// Overhead compares wall, the time runs took at parallel at a time, with
// the least the lab scenarios' own time allows (each lab run lasts as
// long as its trace: the sum of their durations over the parallelism, and
// never less than the longest), in plain words: "; the lab scenarios' own
// time 52.3s at 2 in parallel: at best 26.2s; overhead 12%". The overhead
// is conform's own time: building labs, starting drivers, checking. It is
// "" without lab runs.
func Overhead(runs []Run, wall time.Duration, parallel int) string {
	var sum, longest time.Duration
	n := 0
	for _, r := range runs {
		if r.Trace != nil && len(r.Trace.Events) > 0 && r.Mode == trace.ModeLab {
			d := r.Trace.Events[len(r.Trace.Events)-1].T
			sum += d
			longest = max(longest, d)
			n++
		}
	}
	if sum <= 0 {
		return ""
	}
	at := max(1, min(parallel, n))
	best := max(sum/time.Duration(at), longest)
	return fmt.Sprintf("; the lab scenarios' own time %.1fs at %d in parallel: at best %.1fs; overhead %.0f%%",
		sum.Seconds(), at, best.Seconds(), 100*(wall.Seconds()-best.Seconds())/best.Seconds())
}

// tableJSON is the document of `conform run --json`.
type tableJSON struct {
	Results      []verdict.Result  `json:"results"`
	Disagreement map[string]string `json:"disagreement,omitempty"`
	Pass         bool              `json:"pass"`
	WallSeconds  float64           `json:"wall_seconds"`
}

// JSON writes the table as one indented JSON document: every result, the
// disagreements, whether all passed, and the wall time.
func (t Table) JSON(w io.Writer) error {
	out := tableJSON{Pass: t.Pass(), WallSeconds: t.Wall.Seconds(), Results: []verdict.Result{}}
	for _, r := range t.Runs {
		out.Results = append(out.Results, r.Results...)
	}
	if len(t.Disagree) > 0 {
		out.Disagreement = map[string]string{}
		for n, err := range t.Disagree {
			out.Disagreement[n] = err.Error()
		}
	}
	return encodeJSON(w, out)
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
