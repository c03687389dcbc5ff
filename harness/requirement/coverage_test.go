package requirement

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func testReqs() []Requirement {
	return []Requirement{
		{ID: "A62-STICKY-TF", Doc: A62, Revision: Both, Scope: Core, Section: "Use sticky-TF by default", Text: "Stays in TRANSIENT_FAILURE until READY.",
			Judged: BlackBox},
		{ID: "A61-HE-DELAY-DEFAULT", Doc: A61, Revision: Both, Scope: Core, Section: "Happy Eyeballs in the pick_first LB Policy", Text: "The delay is 250 ms.",
			Judged: BlackBox},
		{ID: "A56-FAILOVER-TIMER-FIRES-RECHOOSE", Doc: A56, Revision: Latest, Scope: Core, Section: "Child Connectivity State Tracking",
			Text:   strings.Repeat("When the failover timer expires priority runs the algorithm again and nothing else changes at all. ", 2),
			Judged: ReferenceOnly, JudgedBecause: strings.Repeat("Only the policy's timer events show what it does when its timer fires. ", 2)},
		{ID: "A56-FAILOVER-TIMER-10S", Doc: A56, Revision: Both, Scope: Core, Section: "Child Connectivity State Tracking", Text: "10 s timer.",
			Judged: ReferenceOnly, JudgedBecause: "The timer is the policy's."},
		{ID: "A61-XDS-ADDITIONAL-ADDRESSES", Doc: A61, Revision: Both, Scope: XDS,
			Section: "Support Multiple Addresses Per Endpoint in xDS, with a heading made long enough to need truncating", Text: "Extra addresses.",
			Judged: BlackBox, Applies: Applies{Langs: []string{Go, Node}, Except: true, UnlessCan: "a_capability_with_a_long_name",
				Env: "GRPC_EXPERIMENTAL_LONG_SWITCH", EnvValue: "true", EnvNot: true,
				Because: "A61, Temporary environment variable protection: the words of the document, long enough to wrap."}},
		{ID: "A61-RESOLVER-ENDPOINT-ATTRIBUTES", Doc: A61, Revision: Both, Scope: Core, Section: "Attributes Returned by the Resolver", Text: "An API.",
			Judged: NotCheckable, JudgedBecause: "The shape of an API."},
	}
}

// TestCoverage_RowsSortedByDocThenID verifies rows come by document, then
// ID, with their specs sorted and de-duplicated.
func TestCoverage_RowsSortedByDocThenID(t *testing.T) {
	c := NewCoverage(testReqs(), map[string][]string{
		"A61-HE-DELAY-DEFAULT": {"sim: default delay", "lab: default delay", "sim: default delay", " "},
	})
	var ids []string
	for _, r := range c.Rows() {
		ids = append(ids, r.ID)
	}
	want := []string{"A56-FAILOVER-TIMER-10S", "A56-FAILOVER-TIMER-FIRES-RECHOOSE", "A61-HE-DELAY-DEFAULT", "A61-RESOLVER-ENDPOINT-ATTRIBUTES", "A61-XDS-ADDITIONAL-ADDRESSES", "A62-STICKY-TF"}
	if !slices.Equal(ids, want) {
		t.Errorf("row order = %v, want %v", ids, want)
	}
	r := c.Rows()[2]
	if !slices.Equal(r.CheckedBy, []string{"lab: default delay", "sim: default delay"}) || !r.Covered() {
		t.Errorf("checked by = %q", r.CheckedBy)
	}
	if c.Rows()[0].Covered() {
		t.Errorf("%s covered with no specs", c.Rows()[0].ID)
	}
}

// TestCoverage_TotalsPerDoc verifies the counts per document, in document
// order: covered requirements by how they are judged, the not-checkable
// ones (never uncovered), and the uncovered checkable ones.
func TestCoverage_TotalsPerDoc(t *testing.T) {
	c := NewCoverage(testReqs(), map[string][]string{
		"A61-HE-DELAY-DEFAULT":   {"a"},
		"A56-FAILOVER-TIMER-10S": {"b"},
		"A62-STICKY-TF":          {"c"},
	})
	want := []Total{
		{Doc: A56, ReferenceOnly: 1, Uncovered: 1},
		{Doc: A61, BlackBox: 1, NotCheckable: 1, Uncovered: 1},
		{Doc: A62, BlackBox: 1},
	}
	got := c.Totals()
	if !slices.Equal(got, want) {
		t.Errorf("Totals = %+v, want %+v", got, want)
	}
	if got[1].All() != 3 || got[1].Covered() != 1 {
		t.Errorf("A61: All %d, Covered %d; want 3, 1", got[1].All(), got[1].Covered())
	}
}

// TestCoverage_UnknownIDs verifies labels naming no requirement are kept
// apart, not counted, and listed after the totals.
func TestCoverage_UnknownIDs(t *testing.T) {
	c := NewCoverage(testReqs(), map[string][]string{"A61-HE-DELAY-DEFUALT": {"spec with a typo"}, "A62-STICKY-TF": {"ok"}})
	if got := c.Unknown(); !slices.Equal(got, []string{"A61-HE-DELAY-DEFUALT"}) {
		t.Errorf("Unknown = %v", got)
	}
	var b bytes.Buffer
	if err := c.Render(&b, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i, j := strings.Index(out, "TOTAL"), strings.Index(out, "A61-HE-DELAY-DEFUALT")
	if i < 0 || j < i || !strings.Contains(out[j:], "used by: spec with a typo") {
		t.Errorf("unknown id not listed after totals:\n%s", out)
	}
}

// TestCoverage_Render verifies the table: header, one block per
// requirement with wrapped text and its specs or UNCOVERED, totals, and no
// line wider than asked.
func TestCoverage_Render(t *testing.T) {
	long := "a spec name that is long enough to need wrapping when the table is narrow, " +
		"which it is here because the test asks for sixty columns"
	c := NewCoverage(testReqs(), map[string][]string{
		"A61-HE-DELAY-DEFAULT": {"pick_first default delay [sim]", long},
	})
	for _, width := range []int{0, 100, 80, 60} {
		var b bytes.Buffer
		if err := c.Render(&b, width); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		limit := width
		if width == 0 {
			limit = DefaultWidth
		}
		for n, l := range strings.Split(out, "\n") {
			if utf8.RuneCountInString(l) > limit {
				t.Errorf("width %d: line %d is %d columns: %q", width, n+1, utf8.RuneCountInString(l), l)
			}
		}
		lines := strings.Split(out, "\n")
		if !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0]+lines[1], "SECTION") {
			t.Errorf("width %d: header = %q", width, lines[0:2])
		}
		for _, r := range testReqs() {
			if !strings.Contains(out, "\n"+r.ID+" ") {
				t.Errorf("width %d: ID %s cut or missing:\n%s", width, r.ID, out)
			}
		}
		// Every word of every text and spec name survives wrapping.
		flat := strings.Join(strings.Fields(out), " ")
		for _, r := range testReqs() {
			if !strings.Contains(flat, strings.Join(strings.Fields(r.Text), " ")) {
				t.Errorf("width %d: text of %s lost:\n%s", width, r.ID, out)
			}
		}
		if !strings.Contains(flat, "checked by: "+long+" pick_first default delay [sim]") {
			t.Errorf("width %d: checked-by list lost:\n%s", width, out)
		}
		if !strings.Contains(flat, "applies: impls not go, node unless can a_capability_with_a_long_name; "+
			"env GRPC_EXPERIMENTAL_LONG_SWITCH!=true A61, Temporary environment variable protection: the words") {
			t.Errorf("width %d: where the document scopes A61-XDS-ADDITIONAL-ADDRESSES is lost:\n%s", width, out)
		}
		if got := strings.Count(out, "    UNCOVERED\n"); got != 4 {
			t.Errorf("width %d: %d UNCOVERED rows, want 4 (a not-checkable one is never uncovered):\n%s", width, got, out)
		}
		for _, r := range testReqs() {
			if !strings.Contains(flat, "judged: "+string(r.Judged)+" "+strings.Join(strings.Fields(r.JudgedBecause), " ")) {
				t.Errorf("width %d: how %s is judged is lost:\n%s", width, r.ID, out)
			}
		}
		if !strings.Contains(out, "...") {
			t.Errorf("width %d: long section not truncated:\n%s", width, out)
		}
		for _, w := range []string{
			"A56       2          0         0              0          2",
			"A61       3          1         0              1          1",
			"A62       1          0         0              0          1",
			"all       6          1         0              1          4",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("width %d: totals lack %q:\n%s", width, w, out)
			}
		}
	}
}

// TestCoverage_RenderBlockLayout pins the layout of one requirement's
// block at 100 columns.
func TestCoverage_RenderBlockLayout(t *testing.T) {
	c := NewCoverage(append(testReqs()[:2], testReqs()[3]), map[string][]string{
		"A62-STICKY-TF": {"spec one", "spec two"}, "A56-FAILOVER-TIMER-10S": {"spec three"}})
	var b bytes.Buffer
	if err := c.Render(&b, 100); err != nil {
		t.Fatal(err)
	}
	want := `ID                      DOC  REV     SCOPE  SECTION
A56-FAILOVER-TIMER-10S  A56  both    core   Child Connectivity State Tracking
    10 s timer.
    judged: reference-only
            The timer is the policy's.
    checked by: spec three
A61-HE-DELAY-DEFAULT    A61  both    core   Happy Eyeballs in the pick_first LB Policy
    The delay is 250 ms.
    judged: black-box
    UNCOVERED
A62-STICKY-TF           A62  both    core   Use sticky-TF by default
    Stays in TRANSIENT_FAILURE until READY.
    judged: black-box
    checked by: spec one
                spec two

DOC   TOTAL  BLACK-BOX  REF-ONLY  NOT-CHECKABLE  UNCOVERED
A56       1          0         1              0          0
A61       1          0         0              0          1
A62       1          1         0              0          0
all       3          1         1              0          1
black-box and ref-only (reference-only) count the requirements some spec checks; uncovered, the
checkable ones no spec checks yet.
`
	if got := b.String(); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}

// TestCoverage_RenderEmbeddedCatalogue verifies the real catalogue renders
// within 100 columns with every requirement present.
func TestCoverage_RenderEmbeddedCatalogue(t *testing.T) {
	var b bytes.Buffer
	if err := NewCoverage(All(), nil).Render(&b, DefaultWidth); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for n, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > DefaultWidth {
			t.Errorf("line %d is %d columns: %q", n+1, utf8.RuneCountInString(l), l)
		}
	}
	for _, r := range All() {
		if !strings.Contains(out, "\n"+r.ID+" ") {
			t.Errorf("%s missing from the table", r.ID)
		}
	}
}

// TestWrap verifies wrapping at spaces and splitting of over-long words.
func TestWrap(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 10, []string{""}},
		{"one two three", 7, []string{"one two", "three"}},
		{"abcdefghij xy", 4, []string{"abcd", "efgh", "ij", "xy"}},
		{"  spaced   out  ", 20, []string{"spaced out"}},
	}
	for _, tt := range tests {
		if got := wrap(tt.s, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	if got := truncate("Happy Eyeballs", 8); got != "Happy..." {
		t.Errorf("truncate = %q", got)
	}
}
