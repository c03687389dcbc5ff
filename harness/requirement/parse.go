package requirement

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxTextLen bounds a requirement's text: one line, a statement, not a
// paragraph of the document.
const MaxTextLen = 160

// MaxReasonLen bounds a reason (judged_because): one line, a sentence or
// two.
const MaxReasonLen = 240

// MaxIDLen bounds an ID, so the coverage table keeps room for the section
// in 100 columns.
const MaxIDLen = 36

// Problem is one thing wrong with a catalogue, placed at file:line.
type Problem struct {
	File string
	Line int    // 1-based
	ID   string // the entry's ID, when it has one
	Msg  string
}

// Error renders "file:line: ID: msg".
func (p Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", p.File, p.Line)
	if p.ID != "" {
		b.WriteString(p.ID)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is every problem found in a catalogue, in line order.
type Error struct {
	Problems []Problem
}

// Error renders one problem per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

var (
	idPattern  = regexp.MustCompile(`^[AL][0-9]+(-[A-Z0-9]+)+$`)
	yamlLineRe = regexp.MustCompile(`line (\d+)`)
)

// fields are the keys an entry may have, in the order documentation lists them.
var fields = []string{"id", "doc", "revision", "section", "text", "scope", "note", "differs_from", "via", "via_section",
	"judged", "judged_because", "impls", "unless_can", "can", "env", "applies_because"}

// entry is a requirement with the line of each of its fields.
type entry struct {
	Requirement
	lines  map[string]int
	values map[string]string // the fields as written, for those validation reads
}

func (e *entry) lineOf(field string) int {
	if l, ok := e.lines[field]; ok {
		return l
	}
	return e.Line
}

// Parse reads and validates a catalogue: a YAML sequence of entries. file
// names the catalogue in problems. Every problem found is reported, as an
// *Error.
func Parse(file string, data []byte) (*Catalogue, error) {
	p := &parser{file: file}
	entries := p.decode(data)
	if len(p.problems) == 0 {
		p.validate(entries)
	}
	if len(p.problems) > 0 {
		slices.SortStableFunc(p.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, &Error{Problems: p.problems}
	}
	c := &Catalogue{byID: make(map[string]int, len(entries))}
	for i, e := range entries {
		c.reqs = append(c.reqs, e.Requirement)
		c.byID[e.ID] = i
	}
	return c, nil
}

type parser struct {
	file     string
	problems []Problem
}

func (p *parser) addf(line int, id, format string, args ...any) {
	p.problems = append(p.problems, Problem{File: p.file, Line: line, ID: id, Msg: fmt.Sprintf(format, args...)})
}

// decode reads the YAML into entries, checking shape only: a sequence of
// mappings of known keys to scalars.
func (p *parser) decode(data []byte) []*entry {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.addf(1, "", "empty catalogue")
			return nil
		}
		line := 1
		if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		p.addf(line, "", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		p.addf(extra.Line, "", "more than one YAML document")
		return nil
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root.Kind != yaml.SequenceNode {
		p.addf(root.Line, "", "the catalogue must be a sequence of entries")
		return nil
	}
	var out []*entry
	for _, n := range root.Content {
		if e := p.entry(n); e != nil {
			out = append(out, e)
		}
	}
	return out
}

func (p *parser) entry(n *yaml.Node) *entry {
	if n.Kind != yaml.MappingNode {
		p.addf(n.Line, "", "an entry must be a mapping of %s", strings.Join(fields, ", "))
		return nil
	}
	e := &entry{lines: map[string]int{}}
	e.Line = n.Line
	values := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(fields, k.Value) {
			p.addf(k.Line, "", "unknown field %q (known: %s)", k.Value, strings.Join(fields, ", "))
			continue
		}
		if first, dup := e.lines[k.Value]; dup {
			p.addf(k.Line, "", "field %q given twice (first at line %d)", k.Value, first)
			continue
		}
		e.lines[k.Value] = v.Line
		if v.Kind != yaml.ScalarNode {
			p.addf(v.Line, "", "field %q must be a single string", k.Value)
			continue
		}
		if v.Tag != "!!null" {
			values[k.Value] = strings.TrimSpace(v.Value)
		}
	}
	e.ID = values["id"]
	e.Doc = Doc(values["doc"])
	e.Revision = Revision(values["revision"])
	e.Section = values["section"]
	e.Text = values["text"]
	e.Scope = Scope(values["scope"])
	if e.Scope == "" {
		e.Scope = Core
	}
	e.Note = values["note"]
	e.DiffersFrom = values["differs_from"]
	e.Via = values["via"]
	e.ViaSection = values["via_section"]
	e.Judged = Judged(values["judged"])
	e.JudgedBecause = values["judged_because"]
	e.values = values
	return e
}

// validate checks each entry, then the references between entries.
func (p *parser) validate(entries []*entry) {
	byID := map[string]*entry{}
	for _, e := range entries {
		p.validateEntry(e)
		if e.ID == "" {
			continue
		}
		if first, dup := byID[e.ID]; dup {
			p.addf(e.lineOf("id"), e.ID, "duplicate id (first at line %d)", first.Line)
			continue
		}
		byID[e.ID] = e
	}
	for _, e := range entries {
		if e.DiffersFrom == "" || byID[e.ID] != e || (e.Revision != Seed && e.Revision != Latest) {
			continue // nothing to follow, or already reported
		}
		line := e.lineOf("differs_from")
		o, ok := byID[e.DiffersFrom]
		switch {
		case !ok:
			p.addf(line, e.ID, "differs_from %q: no such entry", e.DiffersFrom)
		case o == e:
			p.addf(line, e.ID, "differs_from names the entry itself")
		case o.Doc != e.Doc:
			p.addf(line, e.ID, "differs_from %q: that entry is in %s, not %s", o.ID, o.Doc, e.Doc)
		case o.Revision != other(e.Revision):
			p.addf(line, e.ID, "differs_from %q: that entry's revision is %q, want %q", o.ID, o.Revision, other(e.Revision))
		case o.DiffersFrom != e.ID:
			p.addf(line, e.ID, "differs_from %q: that entry does not name %s back in its differs_from", o.ID, e.ID)
		}
	}
}

func other(r Revision) Revision {
	if r == Seed {
		return Latest
	}
	return Seed
}

func (p *parser) validateEntry(e *entry) {
	id := e.ID
	switch {
	case id == "":
		p.addf(e.Line, "", "missing id")
	case !idPattern.MatchString(id):
		p.addf(e.lineOf("id"), id, "id must be upper case words joined by '-', starting with the document (A61-HE-DELAY-DEFAULT)")
	case len(id) > MaxIDLen:
		p.addf(e.lineOf("id"), id, "id is %d characters; at most %d", len(id), MaxIDLen)
	}
	switch {
	case e.Doc == "":
		p.addf(e.Line, id, "missing doc")
	case !slices.Contains(Docs, e.Doc):
		p.addf(e.lineOf("doc"), id, "unknown doc %q (known: %s)", e.Doc, joinDocs())
	case id != "" && !strings.HasPrefix(id, string(e.Doc)+"-"):
		p.addf(e.lineOf("id"), id, "id must start with its doc, %q", string(e.Doc)+"-")
	}
	switch e.Revision {
	case Seed, Latest, Both:
	case "":
		p.addf(e.Line, id, "missing revision (seed, latest or both)")
	default:
		p.addf(e.lineOf("revision"), id, "unknown revision %q (seed, latest or both)", e.Revision)
	}
	if e.Scope != Core && e.Scope != XDS {
		p.addf(e.lineOf("scope"), id, "unknown scope %q (core or xds)", e.Scope)
	}
	if e.Section == "" {
		p.addf(e.lineOf("section"), id, "missing section")
	}
	switch {
	case e.Text == "":
		p.addf(e.lineOf("text"), id, "missing text")
	case strings.ContainsAny(e.Text, "\r\n"):
		p.addf(e.lineOf("text"), id, "text must be one line")
	case len([]rune(e.Text)) > MaxTextLen:
		p.addf(e.lineOf("text"), id, "text is %d characters; say it in at most %d", len([]rune(e.Text)), MaxTextLen)
	}
	if strings.ContainsAny(e.Note, "\r\n") {
		p.addf(e.lineOf("note"), id, "note must be one line")
	}
	if e.DiffersFrom != "" && e.Revision == Both {
		p.addf(e.lineOf("differs_from"), id, "differs_from is for seed or latest entries, not both")
	}
	if (e.Revision == Seed || e.Revision == Latest) && e.DiffersFrom == "" && e.Note == "" {
		p.addf(e.lineOf("revision"), id, "a %s-only entry needs differs_from or a note saying why the other revision has none", e.Revision)
	}
	p.validateJudged(e)
	p.parseApplies(e, e.values)
	switch {
	case e.Via == "" && e.ViaSection != "":
		p.addf(e.lineOf("via_section"), id, "via_section without via")
	case e.Via == "":
	case e.Revision != Latest:
		p.addf(e.lineOf("via"), id, "via is for latest entries (an amending document is part of the latest revision)")
	case !slices.Contains(amendedBy[e.Doc], e.Via):
		p.addf(e.lineOf("via"), id, "%s does not amend %s (known: %v)", e.Via, e.Doc, amendedBy[e.Doc])
	case e.ViaSection == "":
		p.addf(e.lineOf("via"), id, "via needs via_section, the heading in %s", e.Via)
	}
}

// validateJudged checks how the entry says it is judged: one of the
// judgements, with the reason a reference-only or not-checkable entry
// cannot be judged from outside, and none for a black-box one.
func (p *parser) validateJudged(e *entry) {
	id := e.ID
	switch e.Judged {
	case "":
		p.addf(e.Line, id, "missing judged (%s)", joinJudgements())
		return
	case BlackBox:
		if e.JudgedBecause != "" {
			p.addf(e.lineOf("judged_because"), id, "judged_because is for %s and %s entries; a black-box one is judged from outside", ReferenceOnly, NotCheckable)
		}
		return
	case ReferenceOnly, NotCheckable:
	default:
		p.addf(e.lineOf("judged"), id, "unknown judged %q (%s)", e.Judged, joinJudgements())
		return
	}
	switch {
	case e.JudgedBecause == "":
		p.addf(e.lineOf("judged"), id, "a %s entry needs judged_because: what a client shows from outside cannot tell", e.Judged)
	case strings.ContainsAny(e.JudgedBecause, "\r\n"):
		p.addf(e.lineOf("judged_because"), id, "judged_because must be one line")
	case len([]rune(e.JudgedBecause)) > MaxReasonLen:
		p.addf(e.lineOf("judged_because"), id, "judged_because is %d characters; say it in at most %d", len([]rune(e.JudgedBecause)), MaxReasonLen)
	}
}

func joinJudgements() string {
	s := make([]string, len(Judgements))
	for i, j := range Judgements {
		s[i] = string(j)
	}
	return strings.Join(s, ", ")
}

func joinDocs() string {
	s := make([]string, len(Docs))
	for i, d := range Docs {
		s[i] = string(d)
	}
	return strings.Join(s, ", ")
}
