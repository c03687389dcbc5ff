// Package html writes conform's HTML report: one self-contained file
// with the verdict matrix (requirement × implementation) and, for every run,
// the golden and the observed trace as timelines on one time scale.
//
// Like porcupine's Visualize, the page's HTML, CSS and JavaScript are
// embedded in the binary (//go:embed) and written into the one file, with
// the report's data as JSON in a <script type="application/json"> element.
// Nothing is fetched at view time: no network, no fonts, no frameworks.
//
// The package is data in, a file out: it imports the trace and requirement
// formats, the verdicts (harness/verdict) and nothing that runs a scenario.
package html

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	stdhtml "html"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// FileName is the name of the file Write creates in its directory.
const FileName = "index.html"

// Requirement is a row of the matrix. FromCatalogue fills one from the
// requirement catalogue.
type Requirement struct {
	ID      string `json:"id"`
	Doc     string `json:"doc"`     // the rows are grouped by document, in order of first appearance
	Section string `json:"section"` // the document's heading
	Text    string `json:"text"`
}

// FromCatalogue is the row for a catalogue requirement.
func FromCatalogue(r requirement.Requirement) Requirement {
	return Requirement{ID: r.ID, Doc: string(r.Doc), Section: r.Section, Text: r.Text}
}

// Result is the verdict on one requirement for one implementation, spec and
// mode: a verdict.Result with the implementation it is about.
type Result struct {
	Impl        string          `json:"impl"`
	Spec        string          `json:"spec"` // the scenario's name; with Impl and Mode it names the Run
	Requirement string          `json:"requirement"`
	Mode        trace.Mode      `json:"mode"`
	Check       string          `json:"check,omitempty"`
	Verdict     verdict.Verdict `json:"verdict"`
	Kind        verdict.Kind    `json:"kind,omitempty"`
	Evidence    string          `json:"evidence,omitempty"` // the failure message, or the reason for n/a and error
	// Cites are the events of the run's observed trace a fail's evidence
	// cites (filled by Render from the evidence: see cites), by index; the
	// page opens the run's timelines zoomed on them, marked.
	Cites []int `json:"cites,omitempty"`
}

// Run is one scenario run of one implementation in one mode: what was
// observed and the golden trace it is judged against. Either trace may be
// nil (no golden trace yet; the run broke before it produced one).
type Run struct {
	Impl     string
	Spec     string
	Mode     trace.Mode
	Golden   *trace.Trace
	Observed *trace.Trace
	Err      string // why the run broke, if it did
}

// Report is everything the page shows.
type Report struct {
	Title        string
	Generated    time.Time
	Impls        []string // the matrix's columns, in order
	Requirements []Requirement
	Results      []Result
	Runs         []Run
	Since        []Since // implementations at two or more releases; none: no since section
}

// Since is one implementation's since view (report.Matrix.Since): per
// requirement, the first release that passes it and where it regressed.
type Since struct {
	Impl     string     `json:"impl"`
	Versions []string   `json:"versions"` // oldest first
	Rows     []SinceRow `json:"rows"`
}

// SinceRow is one requirement's row of a since view.
type SinceRow struct {
	Requirement string   `json:"requirement"`
	FirstPass   string   `json:"first_pass"` // "" for never
	Regressed   []string `json:"regressed"`
	Uncertain   bool     `json:"uncertain,omitempty"` // an older release gave no verdict: it may have passed earlier
}

//go:embed assets/report.html
var pageHTML string

//go:embed assets/report.css
var pageCSS string

//go:embed assets/report.js
var pageJS string

// Write renders r into dir/index.html, atomically: the page is written to a
// temporary file in dir, synced and renamed into place, so a reader never
// sees half a report. dir is created if needed.
func Write(dir string, r Report) error {
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".index-*.html.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, FileName)); err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Render writes r as one HTML page to w. It refuses a report whose results
// or runs name an implementation or requirement it does not list, or a
// verdict outside the five, naming the field.
func Render(w io.Writer, r Report) error {
	d, err := build(r)
	if err != nil {
		return err
	}
	js, err := encodeData(d)
	if err != nil {
		return err
	}
	title := r.Title
	if title == "" {
		title = "conform report"
	}
	page := strings.NewReplacer(
		"{{TITLE}}", stdhtml.EscapeString(title),
		"/*{{CSS}}*/", pageCSS,
		"/*{{JS}}*/", pageJS,
		"{{DATA}}", js,
	).Replace(pageHTML)
	_, err = io.WriteString(w, page)
	return err
}

// encodeData is the JSON for the page's data element. encoding/json escapes
// <, > and & (and U+2028/9) as \u00XX, so no "</script" or "<!--" can end
// or confuse the element, whatever the evidence says.
func encodeData(d data) (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	if bytes.Contains(bytes.ToLower(b), []byte("</script")) || bytes.Contains(b, []byte("<!--")) {
		return "", errors.New("html report: data would end its script element") // json.Marshal never allows it
	}
	return string(b), nil
}

// data is the page's JSON: the report, with traces listed once (a golden
// trace shared by several runs is embedded once) and every event's String
// form, which the page shows on hover.
type data struct {
	Title        string        `json:"title"`
	Generated    string        `json:"generated"` // RFC 3339
	Harness      string        `json:"harness"`
	Impls        []string      `json:"impls"`
	Requirements []Requirement `json:"requirements"`
	Results      []Result      `json:"results"`
	Runs         []runData     `json:"runs"`
	Traces       []traceData   `json:"traces"`
	Since        []Since       `json:"since,omitempty"`
}

type runData struct {
	ID       string     `json:"id"` // the page's anchor: "run-<n>"
	Impl     string     `json:"impl"`
	Spec     string     `json:"spec"`
	Mode     trace.Mode `json:"mode"`
	Golden   int        `json:"golden"`   // index into Traces, -1 for none
	Observed int        `json:"observed"` // index into Traces, -1 for none
	Err      string     `json:"err,omitempty"`
}

type traceData struct {
	Header trace.Header `json:"header"`
	Events []eventData  `json:"events"`
}

type eventData struct {
	trace.Event
	Str string `json:"str"`
}

func build(r Report) (data, error) {
	d := data{
		Title:        r.Title,
		Harness:      trace.HarnessVersion(),
		Impls:        append([]string{}, r.Impls...),
		Requirements: append([]Requirement{}, r.Requirements...),
		Results:      append([]Result{}, r.Results...),
		Runs:         []runData{},
		Traces:       []traceData{},
		Since:        r.Since,
	}
	if !r.Generated.IsZero() {
		d.Generated = r.Generated.Format(time.RFC3339)
	}
	impls := map[string]bool{}
	for i, im := range r.Impls {
		if im == "" || impls[im] {
			return data{}, fmt.Errorf("html report: Impls[%d] %q is empty or repeated", i, im)
		}
		impls[im] = true
	}
	reqs := map[string]bool{}
	for i, q := range r.Requirements {
		if q.ID == "" || reqs[q.ID] {
			return data{}, fmt.Errorf("html report: Requirements[%d] %q is empty or repeated", i, q.ID)
		}
		reqs[q.ID] = true
	}
	for i, x := range r.Results {
		switch {
		case !impls[x.Impl]:
			return data{}, fmt.Errorf("html report: Results[%d].Impl %q is not in Impls", i, x.Impl)
		case !reqs[x.Requirement]:
			return data{}, fmt.Errorf("html report: Results[%d].Requirement %q is not in Requirements", i, x.Requirement)
		case !x.Verdict.Known():
			return data{}, fmt.Errorf("html report: Results[%d].Verdict %q is not pass, fail, inconclusive, not-applicable or error", i, x.Verdict)
		}
	}
	index := map[*trace.Trace]int{}
	add := func(t *trace.Trace) int {
		if t == nil {
			return -1
		}
		if n, ok := index[t]; ok {
			return n
		}
		td := traceData{Header: t.Header, Events: make([]eventData, len(t.Events))}
		for i, e := range t.Events {
			td.Events[i] = eventData{Event: e, Str: e.String()}
		}
		index[t] = len(d.Traces)
		d.Traces = append(d.Traces, td)
		return index[t]
	}
	observed := map[string]*trace.Trace{}
	for _, x := range r.Runs {
		observed[x.Impl+"\x00"+x.Spec+"\x00"+string(x.Mode)] = x.Observed
	}
	for i, x := range d.Results {
		if tr := observed[x.Impl+"\x00"+x.Spec+"\x00"+string(x.Mode)]; tr != nil && x.Verdict == verdict.Fail {
			d.Results[i].Cites = cites(x.Evidence, tr.Events)
		}
	}
	for i, x := range r.Runs {
		if !impls[x.Impl] {
			return data{}, fmt.Errorf("html report: Runs[%d].Impl %q is not in Impls", i, x.Impl)
		}
		d.Runs = append(d.Runs, runData{
			ID: fmt.Sprintf("run-%d", i), Impl: x.Impl, Spec: x.Spec, Mode: x.Mode,
			Golden: add(x.Golden), Observed: add(x.Observed), Err: x.Err,
		})
	}
	return d, nil
}
