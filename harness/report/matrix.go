package report

import (
	"fmt"
	"io"
	"time"

	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/verdict"
)

// Matrix is what `conform verify` found: requirement × implementation →
// verdict, with the evidence.
type Matrix struct {
	Impls    []Impl // the columns, in order
	Parallel int    // how many runs ran at once
}

// Impl is everything verify found for one implementation.
type Impl struct {
	Name string // "grpc-go@v1.85.0"
	Runs []Run
	// Divergence says, by spec name, how the implementation's trace differs
	// from the reference's golden trace (nil: it agrees).
	Divergence map[string]error
	Wall       time.Duration
}

// What makes verify's exit status 1 (its --fail-on).
const (
	FailOnFail  = "fail"  // a fail or an error
	FailOnError = "error" // only an error: a driver or the harness broke
	FailOnNever = "never"
)

// OK reports whether no verdict is one that failOn (FailOnFail,
// FailOnError, FailOnNever) counts against the run.
func (m Matrix) OK(failOn string) bool {
	for _, im := range m.Impls {
		for _, r := range im.Runs {
			for _, res := range r.Results {
				bad := res.Verdict == verdict.Error || (res.Verdict == verdict.Fail && failOn == FailOnFail)
				if bad && failOn != FailOnNever {
					return false
				}
			}
		}
	}
	return true
}

func (m Matrix) grid() *grid {
	g := newGrid()
	for _, im := range m.Impls {
		for _, r := range im.Runs {
			g.add(im.Name, r.Results)
		}
	}
	g.sort()
	return g
}

// Text prints the matrix, then each implementation's totals and wall time,
// then the evidence of every fail, inconclusive and error, with how the
// trace differs from the reference's golden trace.
func (m Matrix) Text(w io.Writer) {
	const col = 18
	g := m.grid()
	fmt.Fprintf(w, "\n%-36s", "requirement")
	for _, h := range m.headers(col) {
		fmt.Fprintf(w, " %-*s", col, h)
	}
	fmt.Fprintln(w)
	for _, id := range g.rows {
		fmt.Fprintf(w, "%-36s", id)
		for _, im := range m.Impls {
			fmt.Fprintf(w, " %-*s", col, g.label(id, im.Name))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, im := range m.Impls {
		n := map[verdict.Verdict]int{}
		for _, id := range g.rows {
			if v := g.verdict(id, im.Name); v != "" {
				n[v]++
			}
		}
		fmt.Fprintf(w, "%-20s %s (%.1fs%s)\n", im.Name, counts(n), im.Wall.Seconds(), Overhead(im.Runs, im.Wall, m.Parallel))
	}
	m.printSince(w)
	m.printNotApplicable(w)
	m.printEvidence(w)
}

// headers are the implementations' column headers, col wide: each name
// clipped at its end, or, where two would read the same (a user's
// balancer's lab and simulator columns), clipped in its middle.
func (m Matrix) headers(col int) []string {
	var out []string
	seen := map[string]int{}
	for _, im := range m.Impls {
		h := clip(im.Name, col)
		out = append(out, h)
		seen[h]++
	}
	for i, im := range m.Impls {
		if seen[out[i]] > 1 {
			out[i] = clipMiddle(im.Name, col)
		}
	}
	return out
}

// printNotApplicable lists, per implementation, why rows were
// not-applicable: each reason once, with how many results it covers.
func (m Matrix) printNotApplicable(w io.Writer) {
	for _, im := range m.Impls {
		n := map[string]int{}
		var reasons []string
		for _, r := range im.Runs {
			for _, res := range r.Results {
				if res.Verdict != verdict.NotApplicable {
					continue
				}
				if n[res.Evidence] == 0 {
					reasons = append(reasons, res.Evidence)
				}
				n[res.Evidence]++
			}
		}
		if len(reasons) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: not-applicable, and why\n", im.Name)
		for _, why := range reasons {
			fmt.Fprintf(w, "  %3d × %s\n", n[why], firstLine(why))
		}
	}
}

func (m Matrix) printEvidence(w io.Writer) {
	for _, im := range m.Impls {
		shared := m.printSharedErrors(w, im)
		for _, r := range im.Runs {
			var bad []verdict.Result
			for _, res := range r.Results {
				if res.Verdict == verdict.Error && shared[res.Evidence] {
					continue
				}
				if res.Verdict == verdict.Fail || res.Verdict == verdict.Inconclusive || res.Verdict == verdict.Error {
					bad = append(bad, res)
				}
			}
			if len(bad) > 0 {
				fmt.Fprintf(w, "\n── %s · %s\n%s", im.Name, r.Spec, verdict.Failed(bad))
			}
			if err := im.Divergence[r.Spec]; err != nil && len(bad) > 0 {
				fmt.Fprintf(w, "differs from the reference's golden trace:\n%s\n", indent(err.Error()))
			}
		}
	}
}

// printSharedErrors prints once each error of im that more than one run
// gave with the same evidence (a driver that could not be installed or
// started: one cause, not one paragraph per requirement), and returns
// those evidences.
func (m Matrix) printSharedErrors(w io.Writer, im Impl) map[string]bool {
	runs := map[string]map[string]bool{} // evidence → specs
	n := map[string]int{}
	var order []string
	for _, r := range im.Runs {
		for _, res := range r.Results {
			if res.Verdict != verdict.Error {
				continue
			}
			if runs[res.Evidence] == nil {
				runs[res.Evidence] = map[string]bool{}
				order = append(order, res.Evidence)
			}
			runs[res.Evidence][r.Spec+" "+string(r.Mode)] = true
			n[res.Evidence]++
		}
	}
	shared := map[string]bool{}
	for _, ev := range order {
		if len(runs[ev]) > 1 {
			shared[ev] = true
			fmt.Fprintf(w, "\n── %s · error in %d runs (%d results), one cause:\n%s\n", im.Name, len(runs[ev]), n[ev], indent(ev))
		}
	}
	return shared
}

// matrixJSON is the document of `conform verify --json`.
type matrixJSON struct {
	Impls []implJSON       `json:"impls"`
	Pass  bool             `json:"pass"`
	Since map[string]Since `json:"since,omitempty"` // implementations at two or more releases
}

type implJSON struct {
	Impl        string            `json:"impl"`
	WallSeconds float64           `json:"wall_seconds"`
	Results     []verdict.Result  `json:"results"`
	Divergence  map[string]string `json:"golden_divergence,omitempty"`
}

// JSON writes the matrix as one indented JSON document: per implementation
// its results and golden-trace divergences; whether no fail or error.
func (m Matrix) JSON(w io.Writer) error {
	out := matrixJSON{Pass: m.OK(FailOnFail), Since: m.sinceJSON()}
	for _, im := range m.Impls {
		ij := implJSON{Impl: im.Name, WallSeconds: im.Wall.Seconds(), Results: []verdict.Result{}}
		for _, r := range im.Runs {
			ij.Results = append(ij.Results, r.Results...)
			if err := im.Divergence[r.Spec]; err != nil {
				if ij.Divergence == nil {
					ij.Divergence = map[string]string{}
				}
				ij.Divergence[r.Spec] = err.Error()
			}
		}
		out.Impls = append(out.Impls, ij)
	}
	return encodeJSON(w, out)
}

// HTML is the matrix as the HTML page's data (html.Write renders it): the
// catalogue's requirements as rows, and every run with its golden and
// observed trace.
func (m Matrix) HTML(generated time.Time) html.Report {
	rep := html.Report{Title: "conform verify", Generated: generated}
	for _, id := range m.grid().rows {
		if req, ok := requirement.ByID(id); ok {
			rep.Requirements = append(rep.Requirements, html.FromCatalogue(req))
		} else if text, ok := ownRows[id]; ok {
			rep.Requirements = append(rep.Requirements, html.Requirement{ID: id, Text: text})
		}
	}
	rep.Since = m.htmlSince()
	for _, im := range m.Impls {
		rep.Impls = append(rep.Impls, im.Name)
		for _, r := range im.Runs {
			run := html.Run{Impl: im.Name, Spec: r.Spec, Mode: r.Mode, Golden: r.Golden, Observed: r.Trace}
			for _, res := range r.Results {
				rep.Results = append(rep.Results, html.Result{Impl: im.Name, Spec: res.Spec, Requirement: res.Requirement,
					Check: res.Check, Mode: res.Mode, Verdict: res.Verdict, Kind: res.Kind, Evidence: res.Evidence})
				if res.Verdict == verdict.Error {
					run.Err = res.Evidence
				}
			}
			rep.Runs = append(rep.Runs, run)
		}
	}
	return rep
}

// ownRows are the rows of verdicts that are not a requirement's: what they
// say, for the HTML page's matrix.
var ownRows = map[string]string{
	verdict.CrashRow:    "The implementation did not crash during the run.",
	verdict.GoldenTrace: "The reference's trace matches its golden trace.",
}
