package requirement

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// DefaultWidth is the width Render uses when given none.
const DefaultWidth = 100

// minWidth is the narrowest table Render lays out; narrower requests get it.
const minWidth = 60

// Coverage joins requirements with the specs that check them. The suites
// provide the map from their Ginkgo labels.
type Coverage struct {
	rows    []Row
	unknown map[string][]string
}

// Row is one requirement and the specs that check it.
type Row struct {
	Requirement
	CheckedBy []string // spec names, sorted, no duplicates; empty when uncovered
}

// Covered reports whether some spec checks the requirement.
func (r Row) Covered() bool { return len(r.CheckedBy) > 0 }

// Total counts one document's requirements by how they are judged. The
// counts split the document's requirements: BlackBox and ReferenceOnly
// count those some spec checks, NotCheckable those nothing can check, and
// Uncovered the checkable ones no spec checks yet.
type Total struct {
	Doc           Doc `json:"doc,omitempty"`
	BlackBox      int `json:"black_box"`
	ReferenceOnly int `json:"reference_only"`
	NotCheckable  int `json:"not_checkable"`
	Uncovered     int `json:"uncovered"`
}

// All is the number of requirements t counts.
func (t Total) All() int { return t.BlackBox + t.ReferenceOnly + t.NotCheckable + t.Uncovered }

// Covered is the number of requirements t counts that some spec checks.
func (t Total) Covered() int { return t.BlackBox + t.ReferenceOnly }

func (t *Total) add(o Total) {
	t.BlackBox += o.BlackBox
	t.ReferenceOnly += o.ReferenceOnly
	t.NotCheckable += o.NotCheckable
	t.Uncovered += o.Uncovered
}

func (t *Total) count(r Row) {
	switch {
	case r.Judged == NotCheckable:
		t.NotCheckable++
	case !r.Covered():
		t.Uncovered++
	case r.Judged == ReferenceOnly:
		t.ReferenceOnly++
	default:
		t.BlackBox++
	}
}

// NewCoverage joins reqs with checkedBy, a map from requirement ID to the
// names of the specs that check it. IDs in checkedBy that name no
// requirement in reqs are kept apart and reported by Unknown.
func NewCoverage(reqs []Requirement, checkedBy map[string][]string) *Coverage {
	c := &Coverage{unknown: map[string][]string{}}
	known := map[string]bool{}
	for _, r := range reqs {
		known[r.ID] = true
		c.rows = append(c.rows, Row{Requirement: r, CheckedBy: specNames(checkedBy[r.ID])})
	}
	for id, specs := range checkedBy {
		if !known[id] {
			c.unknown[id] = specNames(specs)
		}
	}
	slices.SortFunc(c.rows, func(a, b Row) int {
		if d := docOrder(a.Doc) - docOrder(b.Doc); d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	return c
}

func specNames(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func docOrder(d Doc) int {
	if i := slices.Index(Docs, d); i >= 0 {
		return i
	}
	return len(Docs)
}

// Rows returns the requirements sorted by document, then ID.
func (c *Coverage) Rows() []Row { return slices.Clone(c.rows) }

// Unknown returns the IDs the specs name that are not requirements, sorted.
// A non-empty result means a label is misspelt or names a removed entry.
func (c *Coverage) Unknown() []string {
	ids := make([]string, 0, len(c.unknown))
	for id := range c.unknown {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Totals counts the requirements per document by how they are judged (and
// the uncovered ones), for the documents that have requirements, in
// document order.
func (c *Coverage) Totals() []Total {
	var out []Total
	for _, r := range c.rows {
		if len(out) == 0 || out[len(out)-1].Doc != r.Doc {
			out = append(out, Total{Doc: r.Doc})
		}
		out[len(out)-1].count(r)
	}
	return out
}

// Render writes the table `conform requirements` prints: one block per
// requirement (ID, document, revision, scope and section on the first line;
// the text, how it is judged with the reason, where the document scopes it
// with the document's words, then the specs that check it or UNCOVERED,
// indented below), then totals per document, then any unknown
// IDs. No line is wider than
// width columns (DefaultWidth when width <= 0, at least 60): text and spec
// names wrap at spaces, sections are truncated with "..." and move to a
// line of their own when the table is too narrow. IDs are never cut.
func (c *Coverage) Render(w io.Writer, width int) error {
	if width <= 0 {
		width = DefaultWidth
	}
	width = max(width, minWidth)
	bw := bufio.NewWriter(w)

	idW := len("ID")
	for _, r := range c.rows {
		idW = max(idW, utf8.RuneCountInString(r.ID))
	}
	const indent = "    "
	// The section ends the first line when at least minSection columns
	// are left for it; otherwise it gets a line of its own.
	const minSection = 16
	ownLine := width-(idW+2+3+2+6+2+5+2) < minSection
	head := func(id, doc, rev, scope, section string) {
		line := fmt.Sprintf("%-*s  %-3s  %-6s  %-5s  ", idW, id, doc, rev, scope)
		if ownLine {
			fmt.Fprintln(bw, truncate(strings.TrimRight(line, " "), width))
			line = indent
		}
		line += truncate(section, width-utf8.RuneCountInString(line))
		fmt.Fprintln(bw, strings.TrimRight(line, " "))
	}
	head("ID", "DOC", "REV", "SCOPE", "SECTION")
	for _, r := range c.rows {
		head(r.ID, string(r.Doc), string(r.Revision), string(r.Scope), r.Section)
		for _, l := range wrap(r.Text, width-len(indent)) {
			fmt.Fprintln(bw, indent+l)
		}
		writeReason(bw, indent+"judged: ", string(r.Judged), r.JudgedBecause, width)
		if r.Applies.Scoped() {
			writeReason(bw, indent+"applies: ", r.Applies.String(), r.Applies.Because, width)
		}
		switch {
		case r.Covered():
			writeList(bw, indent+"checked by: ", r.CheckedBy, width)
		case r.Judged != NotCheckable:
			fmt.Fprintln(bw, indent+"UNCOVERED")
		}
	}

	fmt.Fprintln(bw)
	const totals = "%-5s %5v %10v %9v %14v %10v\n"
	fmt.Fprintf(bw, totals, "DOC", "TOTAL", "BLACK-BOX", "REF-ONLY", "NOT-CHECKABLE", "UNCOVERED")
	var all Total
	for _, t := range c.Totals() {
		fmt.Fprintf(bw, totals, t.Doc, t.All(), t.BlackBox, t.ReferenceOnly, t.NotCheckable, t.Uncovered)
		all.add(t)
	}
	fmt.Fprintf(bw, totals, "all", all.All(), all.BlackBox, all.ReferenceOnly, all.NotCheckable, all.Uncovered)
	for _, l := range wrap("black-box and ref-only (reference-only) count the requirements some spec "+
		"checks; uncovered, the checkable ones no spec checks yet.", width) {
		fmt.Fprintln(bw, l)
	}

	if ids := c.Unknown(); len(ids) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "Labels naming no requirement in the catalogue:")
		for _, id := range ids {
			fmt.Fprintln(bw, indent+truncate(id, width-len(indent)))
			writeList(bw, indent+indent+"used by: ", c.unknown[id], width)
		}
	}
	return bw.Flush()
}

// writeList writes items after prefix, one per line, continuation lines
// aligned under the first item and long items wrapped.
func writeList(w io.Writer, prefix string, items []string, width int) {
	pad := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	lead := prefix
	for _, it := range items {
		for _, l := range wrap(it, width-len(pad)) {
			fmt.Fprintln(w, lead+l)
			lead = pad
		}
	}
}

// JSON writes the coverage as one JSON object: the requirements (in Rows'
// order, each with how it is judged and the specs that check it), the
// totals per document and over all (as Totals counts them), and the IDs
// the specs name that are not requirements, with the specs naming them.
func (c *Coverage) JSON(w io.Writer) error {
	type applies struct {
		Impls     []string `json:"impls,omitempty"`
		Except    bool     `json:"except,omitempty"` // impls are the languages the rule is not for
		UnlessCan string   `json:"unless_can,omitempty"`
		Can       string   `json:"can,omitempty"`
		CanNot    bool     `json:"can_not,omitempty"`
		Env       string   `json:"env,omitempty"` // NAME=value or NAME!=value
		Because   string   `json:"because"`
	}
	type row struct {
		ID            string   `json:"id"`
		Doc           Doc      `json:"doc"`
		Revision      Revision `json:"revision"`
		Scope         Scope    `json:"scope"`
		Section       string   `json:"section"`
		Text          string   `json:"text"`
		Note          string   `json:"note,omitempty"`
		Judged        Judged   `json:"judged"`
		JudgedBecause string   `json:"judged_because,omitempty"`
		Applies       *applies `json:"applies,omitempty"`
		CheckedBy     []string `json:"checked_by"`
	}
	type totalAll struct {
		Total
		N int `json:"total"`
	}
	out := struct {
		Requirements []row               `json:"requirements"`
		Totals       []totalAll          `json:"totals"`
		All          totalAll            `json:"all"`
		Unknown      map[string][]string `json:"unknown,omitempty"`
	}{Requirements: []row{}, Unknown: c.unknown}
	for _, r := range c.rows {
		o := row{
			ID: r.ID, Doc: r.Doc, Revision: r.Revision, Scope: r.Scope, Section: r.Section, Text: r.Text, Note: r.Note,
			Judged: r.Judged, JudgedBecause: r.JudgedBecause, CheckedBy: append([]string{}, r.CheckedBy...),
		}
		if a := r.Applies; a.Scoped() {
			o.Applies = &applies{Impls: a.Langs, Except: a.Except, UnlessCan: a.UnlessCan, Can: a.Can, CanNot: a.CanNot, Because: a.Because}
			if a.Env != "" {
				o.Applies.Env = a.Env + map[bool]string{false: "=", true: "!="}[a.EnvNot] + a.EnvValue
			}
		}
		out.Requirements = append(out.Requirements, o)
	}
	var all Total
	for _, t := range c.Totals() {
		out.Totals = append(out.Totals, totalAll{t, t.All()})
		all.add(t)
	}
	out.All = totalAll{all, all.All()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeReason writes what after prefix and, when there is one, the reason
// below it, both wrapped and aligned under what's start.
func writeReason(w io.Writer, prefix, what, reason string, width int) {
	pad := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	for i, l := range wrap(what, width-len(pad)) {
		if i == 0 {
			fmt.Fprintln(w, prefix+l)
		} else {
			fmt.Fprintln(w, pad+l)
		}
	}
	if reason == "" {
		return
	}
	for _, l := range wrap(reason, width-len(pad)) {
		fmt.Fprintln(w, pad+l)
	}
}

// truncate shortens s to at most n runes, marking the cut with "...".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 3 {
		return string([]rune(s)[:max(n, 0)])
	}
	return strings.TrimRight(string([]rune(s)[:n-3]), " ") + "..."
}

// wrap breaks s into lines of at most n runes at spaces, splitting words
// longer than a line.
func wrap(s string, n int) []string {
	n = max(n, 1)
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		switch {
		case len(cur) == 0:
		case len(cur)+1+len(wr) <= n:
			cur = append(cur, ' ')
			cur = append(cur, wr...)
			continue
		default:
			lines = append(lines, string(cur))
			cur = nil
		}
		for len(wr) > n {
			lines = append(lines, string(wr[:n]))
			wr = wr[n:]
		}
		cur = wr
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, string(cur))
	}
	return lines
}
