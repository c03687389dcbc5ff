package main

import (
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// The HTML views of try and diff: two timelines of one scenario on one time
// scale (the page's golden and observed panes), a row per verdict, and a
// failing row's cited event marked, as verify's page shows them.

// Rows of their own: what a comparison of two traces says.
const (
	agreesRow    = "agrees-with-reference"
	agreesText   = "The run agrees with the reference's run of the same scenario, on what both show from outside (connection attempts, channel states, RPC results)."
	diffRow      = "diff"
	diffRowsText = "B agrees with A, lane by lane (the first divergence is marked)."
)

// pageBuilder gathers an HTML page's rows, results and runs.
type pageBuilder struct {
	rep  html.Report
	rows map[string]bool
}

func newPage(title string) *pageBuilder {
	return &pageBuilder{rep: html.Report{Title: title, Generated: time.Now()}, rows: map[string]bool{}}
}

// column adds an implementation's column once.
func (p *pageBuilder) column(impl string) {
	for _, c := range p.rep.Impls {
		if c == impl {
			return
		}
	}
	p.rep.Impls = append(p.rep.Impls, impl)
}

// row adds a requirement's row once: the catalogue's, or one of this
// file's own.
func (p *pageBuilder) row(id, text string) {
	if p.rows[id] {
		return
	}
	p.rows[id] = true
	if req, ok := requirement.ByID(id); ok {
		p.rep.Requirements = append(p.rep.Requirements, html.FromCatalogue(req))
		return
	}
	p.rep.Requirements = append(p.rep.Requirements, html.Requirement{ID: id, Doc: "comparison", Text: text})
}

// run adds a run with its results (monitors' verdicts, a comparison's);
// golden is the trace it is set against (the reference's, or A), nil for
// none.
func (p *pageBuilder) run(impl, name string, golden, observed *trace.Trace, results []verdict.Result) {
	p.column(impl)
	mode := trace.ModeLab
	if observed != nil {
		mode = observed.Header.Mode
	}
	p.rep.Runs = append(p.rep.Runs, html.Run{Impl: impl, Spec: name, Mode: mode, Golden: golden, Observed: observed})
	for _, r := range results {
		if r.Verdict == verdict.NotApplicable {
			continue // a page of what the run showed, not of every monitor there is
		}
		p.row(r.Requirement, "")
		p.rep.Results = append(p.rep.Results, html.Result{Impl: impl, Spec: name, Requirement: r.Requirement, Check: r.Check,
			Mode: mode, Verdict: r.Verdict, Kind: r.Kind, Evidence: r.Evidence})
	}
}

// comparison is a compare result as a row's verdict: pass when the traces
// agree, else fail with the divergence (whose '>' lines the page marks).
func comparison(id, name string, mode trace.Mode, res compare.Result) verdict.Result {
	r := verdict.Result{Spec: name, Requirement: id, Mode: mode, Verdict: verdict.Pass}
	if !res.Equal() {
		r.Verdict, r.Kind, r.Evidence = verdict.Fail, verdict.Deviates, res.String()
	}
	return r
}

// write writes the page into dir.
func (p *pageBuilder) write(dir string) error { return html.Write(dir, p.rep) }

// baseName is a file's name without its directory and trace extensions, for
// a page's run names.
func baseName(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		path = path[i+1:]
	}
	for _, ext := range []string{".gz", ".jsonl", ".pcapng", ".pcap"} {
		path = strings.TrimSuffix(path, ext)
	}
	return path
}
