package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// report aggregates outcomes into one verdict per requirement and mode.
type report struct {
	outcomes []spec.Outcome
	disagree map[string]error
	wall     time.Duration
	parallel int
	rows     []string                                   // requirement IDs, sorted by doc then ID
	cell     map[string]map[trace.Mode][]verdict.Result // requirement → mode → results
	modes    []trace.Mode
}

func newReport(outcomes []spec.Outcome, disagree map[string]error, wall time.Duration, parallel int) *report {
	r := &report{outcomes: outcomes, disagree: disagree, wall: wall, parallel: parallel, cell: map[string]map[trace.Mode][]verdict.Result{}}
	seenMode := map[trace.Mode]bool{}
	for _, o := range outcomes {
		seenMode[o.Mode] = true
		for _, res := range o.Results {
			if r.cell[res.Requirement] == nil {
				r.cell[res.Requirement] = map[trace.Mode][]verdict.Result{}
				r.rows = append(r.rows, res.Requirement)
			}
			r.cell[res.Requirement][o.Mode] = append(r.cell[res.Requirement][o.Mode], res)
		}
	}
	for _, m := range []trace.Mode{spec.Sim, spec.Lab} {
		if seenMode[m] {
			r.modes = append(r.modes, m)
		}
	}
	sort.Strings(r.rows)
	return r
}

// verdictOf folds several results into one: error beats fail beats pass
// beats not-applicable.
func verdictOf(rs []verdict.Result) verdict.Verdict {
	if len(rs) == 0 {
		return ""
	}
	rank := map[verdict.Verdict]int{verdict.NotApplicable: 0, verdict.Pass: 1, verdict.Fail: 2, verdict.Error: 3}
	v := verdict.NotApplicable
	for _, r := range rs {
		if rank[r.Verdict] > rank[v] {
			v = r.Verdict
		}
	}
	return v
}

func (r *report) allPass() bool {
	if len(r.disagree) > 0 {
		return false
	}
	for _, o := range r.outcomes {
		for _, res := range o.Results {
			if res.Verdict != verdict.Pass {
				return false
			}
		}
	}
	return true
}

func (r *report) print(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-36s", "requirement")
	for _, m := range r.modes {
		fmt.Fprintf(w, " %-14s", m)
	}
	fmt.Fprintln(w, " text")
	totals := map[trace.Mode]map[verdict.Verdict]int{}
	for _, id := range r.rows {
		fmt.Fprintf(w, "%-36s", id)
		for _, m := range r.modes {
			v := verdictOf(r.cell[id][m])
			if totals[m] == nil {
				totals[m] = map[verdict.Verdict]int{}
			}
			if v != "" {
				totals[m][v]++
			} else {
				v = "-"
			}
			fmt.Fprintf(w, " %-14s", v)
		}
		text := ""
		if req, ok := requirement.ByID(id); ok {
			text = req.Text
		}
		fmt.Fprintln(w, " "+clip(text, 60))
	}
	fmt.Fprintln(w)
	for _, m := range r.modes {
		t := totals[m]
		fmt.Fprintf(w, "%-4s %d pass, %d fail, %d error, %d not-applicable\n", m, t[verdict.Pass], t[verdict.Fail], t[verdict.Error], t[verdict.NotApplicable])
	}
	r.printAgreement(w)
	r.printEvidence(w)
	r.printTiming(w)
}

func (r *report) printAgreement(w io.Writer) {
	names := make([]string, 0, len(r.disagree))
	for n := range r.disagree {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "\nsimulator/lab disagreement in %s:\n%s\n", n, r.disagree[n])
	}
}

func (r *report) printEvidence(w io.Writer) {
	for _, o := range r.outcomes {
		if msg := verdict.Failed(o.Results); msg != "" {
			fmt.Fprintf(w, "\n%s", msg)
		}
	}
}

// printTiming reports the wall time against the limit the scenarios' own
// durations impose: the sum of their durations divided by the parallelism.
func (r *report) printTiming(w io.Writer) {
	var sum time.Duration
	for _, o := range r.outcomes {
		if o.Trace != nil && len(o.Trace.Events) > 0 && o.Mode == spec.Lab {
			sum += o.Trace.Events[len(o.Trace.Events)-1].T
		}
	}
	fmt.Fprintf(w, "\n%d runs in %.1fs", len(r.outcomes), r.wall.Seconds())
	if sum > 0 {
		limit := sum / time.Duration(r.parallel)
		fmt.Fprintf(w, " (lab scenarios' own time %.1fs, /%d = %.1fs; wall/limit %.2f)", sum.Seconds(), r.parallel, limit.Seconds(), r.wall.Seconds()/limit.Seconds())
	}
	fmt.Fprintln(w)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

type jsonReport struct {
	Results      []verdict.Result  `json:"results"`
	Disagreement map[string]string `json:"disagreement,omitempty"`
	Pass         bool              `json:"pass"`
	WallSeconds  float64           `json:"wall_seconds"`
}

func (r *report) json() jsonReport {
	out := jsonReport{Pass: r.allPass(), WallSeconds: r.wall.Seconds(), Results: []verdict.Result{}}
	for _, o := range r.outcomes {
		out.Results = append(out.Results, o.Results...)
	}
	if len(r.disagree) > 0 {
		out.Disagreement = map[string]string{}
		for n, err := range r.disagree {
			out.Disagreement[n] = err.Error()
		}
	}
	return out
}

// JUnit XML: one testsuite per document, one testcase per requirement,
// spec and mode.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func writeJUnit(path string, outcomes []spec.Outcome) error {
	byDoc := map[string]*junitSuite{}
	var docs []string
	for _, o := range outcomes {
		for _, r := range o.Results {
			s := byDoc[r.Doc]
			if s == nil {
				s = &junitSuite{Name: r.Doc}
				byDoc[r.Doc] = s
				docs = append(docs, r.Doc)
			}
			c := junitCase{Name: fmt.Sprintf("%s [%s] %s", r.Requirement, r.Mode, r.Spec), Classname: strings.ToLower(r.Doc) + "." + r.Spec}
			msg := &junitMessage{Message: firstLine(r.Evidence), Body: r.Evidence}
			switch r.Verdict {
			case verdict.Fail:
				c.Failure, s.Failures = msg, s.Failures+1
			case verdict.Error:
				c.Error, s.Errors = msg, s.Errors+1
			case verdict.NotApplicable:
				c.Skipped, s.Skipped = msg, s.Skipped+1
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
	}
	var all junitSuites
	sort.Strings(docs)
	for _, d := range docs {
		all.Suites = append(all.Suites, *byDoc[d])
	}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".junit-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append([]byte(xml.Header), b...)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
