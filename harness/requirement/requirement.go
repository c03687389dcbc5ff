// Package requirement is the catalogue of checkable statements of the gRFCs
// conform checks: one Requirement per statement, in our own words, with the
// document, revision and section it comes from.
//
// The catalogue lives in catalogue.yaml, embedded in the binary and validated
// when it is first used. Suites name the requirements they check in their
// Ginkgo labels; Coverage turns those labels into the table `conform
// requirements` prints.
package requirement

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Doc is a gRFC the catalogue draws from: "A61".
type Doc string

// The documents the catalogue knows.
const (
	A56 Doc = "A56"
	A61 Doc = "A61"
	A62 Doc = "A62"
	A75 Doc = "A75"
	// L9 is grpc-go's resolver and balancer API (a grpc-go design
	// document, one revision).
	L9 Doc = "L9"
)

// Docs lists the known documents in the order tables use.
var Docs = []Doc{A56, A61, A62, A75, L9}

// amendedBy names, per document, the documents that amend its latest
// revision (their statements are entered under the amended document with
// Via set).
var amendedBy = map[Doc][]string{A56: {"A115"}}

// Revision says which revision of a document a statement comes from.
type Revision string

const (
	// Seed is the revision in shared/spec/.
	Seed Revision = "seed"
	// Latest is the revision in shared/spec/related/*-latest-revision.md,
	// together with the documents that amend it (A115 for A56).
	Latest Revision = "latest"
	// Both marks a statement the two revisions make alike.
	Both Revision = "both"
)

// Scope says which suites check a statement.
type Scope string

const (
	// Core statements need no xDS: resolver, pick_first, petioles, priority.
	Core Scope = "core"
	// XDS statements need an xDS control plane; a later issue fills them.
	XDS Scope = "xds"
)

// Judged says how a requirement is judged (DESIGN.md, "How a verdict is
// reached"): from what any client shows from outside, from the reference's
// own policy events only, or not at all.
type Judged string

const (
	// BlackBox requirements are judged on any implementation, from what a
	// client shows from outside: packets (SYNs and their fates, kernel
	// timestamps), channel states, RPC results and the backend that served
	// them, re-resolution (DNS queries, resolve-now), xDS requests with
	// their ACKs and NACKs.
	BlackBox Judged = "black-box"
	// ReferenceOnly requirements show only in the policy's own events (its
	// timers, its subchannels, which child it chose): they are judged on
	// the reference, whose trace records them.
	ReferenceOnly Judged = "reference-only"
	// NotCheckable requirements have no effect a client shows from outside
	// and none the reference's events show either (a MAY with no visible
	// effect, the shape of an internal API): no check judges them.
	NotCheckable Judged = "not-checkable"
)

// Judgements lists the ways of judging, in the order tables count them.
var Judgements = []Judged{BlackBox, ReferenceOnly, NotCheckable}

// Requirement is one checkable statement of a gRFC.
type Requirement struct {
	ID       string   // stable, upper case, prefixed with Doc: "A61-HE-DELAY-DEFAULT"
	Doc      Doc      // the document
	Revision Revision // seed, latest or both
	Section  string   // the document's heading the statement comes from
	Text     string   // the statement, one line, in our words
	Scope    Scope    // core or xds
	Note     string   // optional: strength, implementations, how revisions differ
	// DiffersFrom is, for a seed or latest statement, the ID of the
	// statement the other revision makes instead.
	DiffersFrom string
	// Via and ViaSection name the amending document and its section when
	// a latest statement comes from one ("A115", "Proposal").
	Via        string
	ViaSection string
	// Judged says how the statement is judged; JudgedBecause says why a
	// reference-only or not-checkable one cannot be judged from outside.
	Judged        Judged
	JudgedBecause string
	// Applies is where the document scopes the statement (a language, a
	// feature, an environment switch); the zero Applies scopes nothing.
	Applies Applies
	// Line is the entry's line in catalogue.yaml.
	Line int
}

// AppliesTo reports whether r holds in revision rev (Seed or Latest).
func (r Requirement) AppliesTo(rev Revision) bool {
	return r.Revision == Both || r.Revision == rev
}

// String renders "ID (doc revision, section)".
func (r Requirement) String() string {
	return fmt.Sprintf("%s (%s %s, %q)", r.ID, r.Doc, r.Revision, r.Section)
}

// IsID reports whether s has the shape of a requirement ID of a known
// document, so suites can tell requirement labels from others (Slow, Lab).
// It does not say the ID is in the catalogue; ByID does.
func IsID(s string) bool {
	if !idPattern.MatchString(s) || len(s) > MaxIDLen {
		return false
	}
	for _, d := range Docs {
		if strings.HasPrefix(s, string(d)+"-") {
			return true
		}
	}
	return false
}

// FileName is the name catalogue errors use for the embedded catalogue.
const FileName = "catalogue.yaml"

//go:embed catalogue.yaml
var catalogueYAML []byte

var (
	loadOnce sync.Once
	loaded   *Catalogue
)

// Default is the embedded catalogue. It panics if the catalogue does not
// validate; the package's tests report the same problems with file:line.
func Default() *Catalogue {
	loadOnce.Do(func() {
		c, err := Parse(FileName, catalogueYAML)
		if err != nil {
			panic("requirement: embedded catalogue is invalid:\n" + err.Error())
		}
		loaded = c
	})
	return loaded
}

// All returns every requirement of the embedded catalogue in file order.
func All() []Requirement { return Default().All() }

// ByID looks a requirement up in the embedded catalogue.
func ByID(id string) (Requirement, bool) { return Default().ByID(id) }

// ForDoc returns the embedded catalogue's requirements of one document, in
// file order.
func ForDoc(doc Doc) []Requirement { return Default().ForDoc(doc) }

// Catalogue is a validated list of requirements.
type Catalogue struct {
	reqs []Requirement
	byID map[string]int
}

// All returns a copy of the requirements in file order.
func (c *Catalogue) All() []Requirement { return slices.Clone(c.reqs) }

// ByID looks a requirement up by its ID.
func (c *Catalogue) ByID(id string) (Requirement, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Requirement{}, false
	}
	return c.reqs[i], true
}

// ForDoc returns the requirements of one document in file order.
func (c *Catalogue) ForDoc(doc Doc) []Requirement {
	var out []Requirement
	for _, r := range c.reqs {
		if r.Doc == doc {
			out = append(out, r)
		}
	}
	return out
}
