package requirement

import (
	"errors"
	"strings"
	"testing"
)

// TestCatalogue_EmbeddedLoadsAndValidates verifies the embedded catalogue
// parses and validates; a broken entry fails here with catalogue.yaml:line.
func TestCatalogue_EmbeddedLoadsAndValidates(t *testing.T) {
	c, err := Parse(FileName, catalogueYAML)
	if err != nil {
		t.Fatalf("embedded catalogue:\n%v", err)
	}
	if got, want := len(c.All()), len(All()); got != want {
		t.Fatalf("Parse gives %d requirements, All gives %d", got, want)
	}
	for _, d := range []Doc{A56, A61, A62, A75} {
		if n := len(ForDoc(d)); n == 0 {
			t.Errorf("ForDoc(%s) is empty", d)
		}
	}
	for _, r := range All() {
		if r.Line <= 0 {
			t.Errorf("%s: no line recorded", r.ID)
		}
	}
}

// TestCatalogue_ByIDAndForDoc verifies lookups by ID and by document,
// including the IDs other packages already name.
func TestCatalogue_ByIDAndForDoc(t *testing.T) {
	for _, id := range []string{"A61-HE-DELAY-DEFAULT", "A61-HE-DELAY-CLAMP", "A62-STICKY-TF", "A56-FAILOVER-TIMER-10S", "A75-IDLE-TIMEOUT-DEFAULT-1H"} {
		r, ok := ByID(id)
		if !ok {
			t.Errorf("ByID(%q): not found", id)
			continue
		}
		if r.ID != id || !strings.HasPrefix(id, string(r.Doc)+"-") || r.Section == "" || r.Text == "" {
			t.Errorf("ByID(%q) = %+v", id, r)
		}
	}
	if r, ok := ByID("A61-NO-SUCH-THING"); ok {
		t.Errorf("ByID of an unknown id = %+v, true", r)
	}
	total := 0
	for _, d := range Docs {
		for _, r := range ForDoc(d) {
			if r.Doc != d {
				t.Errorf("ForDoc(%s) returned %s of %s", d, r.ID, r.Doc)
			}
			total++
		}
	}
	if total != len(All()) {
		t.Errorf("ForDoc over all documents gives %d requirements, All gives %d", total, len(All()))
	}
	// All returns a copy: changing it does not change the catalogue.
	all := All()
	all[0].ID = "CHANGED"
	if All()[0].ID == "CHANGED" {
		t.Error("All returned the catalogue's own slice")
	}
}

// TestCatalogue_RevisionDifferencesArePaired verifies the differences
// between seed and latest revisions are entered as cross-referenced pairs.
func TestCatalogue_RevisionDifferencesArePaired(t *testing.T) {
	pairs := [][2]string{
		{"A56-FAILOVER-TIMER-FIRES-AS-TF", "A56-FAILOVER-TIMER-FIRES-RECHOOSE"},
		{"A56-FAILOVER-TIMER-EVERY-CONNECTING", "A56-FAILOVER-TIMER-NEW-CONNECTING"},
		{"A56-REMOVED-CHILD-RETAINED", "A56-REMOVED-CHILD-DESTROYED"},
		{"A56-READDED-CHILD-NOT-REACTIVATED", "A56-READDED-CHILD-NEW"},
		{"A62-SHUFFLE-BEFORE-CONNECT", "A62-SHUFFLE-ON-UPDATE"},
		{"A61-LOGICAL-DNS-FORCED-PICK-FIRST", "A61-LOGICAL-DNS-ONE-ENDPOINT"},
		{"A75-AGG-BACKCOMPAT-ENV", "A75-AGG-BACKCOMPAT-UNDERLYING"},
	}
	for _, p := range pairs {
		seed, ok1 := ByID(p[0])
		latest, ok2 := ByID(p[1])
		if !ok1 || !ok2 {
			t.Errorf("pair %v: missing entry", p)
			continue
		}
		if seed.Revision != Seed || latest.Revision != Latest || seed.DiffersFrom != latest.ID || latest.DiffersFrom != seed.ID {
			t.Errorf("pair %v not cross-referenced: %+v / %+v", p, seed, latest)
		}
		if !seed.AppliesTo(Seed) || seed.AppliesTo(Latest) || latest.AppliesTo(Seed) || !latest.AppliesTo(Latest) {
			t.Errorf("pair %v: AppliesTo wrong", p)
		}
	}
	for _, r := range All() {
		if r.Revision != Both && r.DiffersFrom == "" && r.Note == "" {
			t.Errorf("%s: %s-only with neither differs_from nor note", r.ID, r.Revision)
		}
	}
}

// TestCatalogue_A75IsXDS verifies every A75 statement is scoped xds: the
// document changes only the xDS cluster tree and xds_override_host.
func TestCatalogue_A75IsXDS(t *testing.T) {
	for _, r := range ForDoc(A75) {
		if r.Scope != XDS {
			t.Errorf("catalogue.yaml:%d: %s: scope %q, want xds", r.Line, r.ID, r.Scope)
		}
	}
}

// TestParse_BadCatalogues verifies each kind of broken catalogue is refused
// with file:line of the bad entry's field.
func TestParse_BadCatalogues(t *testing.T) {
	const good = `- id: A61-GOOD
  doc: A61
  revision: both
  section: S
  text: T
  judged: black-box
`
	tests := []struct {
		name, yaml string
		want       []string // each a line of the error
	}{
		{
			name: "duplicate id",
			yaml: good + good,
			want: []string{"bad.yaml:7: A61-GOOD: duplicate id (first at line 1)"},
		},
		{
			name: "id prefix not its doc",
			yaml: good + "- id: A62-WRONG\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{`bad.yaml:7: A62-WRONG: id must start with its doc, "A61-"`},
		},
		{
			name: "id not upper case",
			yaml: "- id: A61-lower\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{"bad.yaml:1: A61-lower: id must be upper case words"},
		},
		{
			name: "id too long",
			yaml: "- id: A61-AN-IDENTIFIER-FAR-TOO-LONG-FOR-THE-TABLE\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{"bad.yaml:1: A61-AN-IDENTIFIER-FAR-TOO-LONG-FOR-THE-TABLE: id is 44 characters; at most 36"},
		},
		{
			name: "dangling differs_from",
			yaml: good + "- id: A61-SEED\n  doc: A61\n  revision: seed\n  section: S\n  text: T\n  differs_from: A61-GONE\n  judged: black-box\n",
			want: []string{`bad.yaml:12: A61-SEED: differs_from "A61-GONE": no such entry`},
		},
		{
			name: "differs_from same revision",
			yaml: "- id: A61-A\n  doc: A61\n  revision: seed\n  section: S\n  text: T\n  differs_from: A61-B\n  judged: black-box\n" +
				"- id: A61-B\n  doc: A61\n  revision: seed\n  section: S\n  text: T\n  differs_from: A61-A\n  judged: black-box\n",
			want: []string{
				`bad.yaml:6: A61-A: differs_from "A61-B": that entry's revision is "seed", want "latest"`,
				`bad.yaml:13: A61-B: differs_from "A61-A": that entry's revision is "seed", want "latest"`,
			},
		},
		{
			name: "differs_from one way only",
			yaml: "- id: A61-A\n  doc: A61\n  revision: seed\n  section: S\n  text: T\n  differs_from: A61-B\n  judged: black-box\n" +
				"- id: A61-B\n  doc: A61\n  revision: latest\n  section: S\n  text: T\n  note: new\n  judged: black-box\n",
			want: []string{`bad.yaml:6: A61-A: differs_from "A61-B": that entry does not name A61-A back`},
		},
		{
			name: "differs_from on both",
			yaml: good + "- id: A61-B\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  differs_from: A61-GOOD\n  judged: black-box\n",
			want: []string{
				"bad.yaml:12: A61-B: differs_from is for seed or latest entries, not both",
			},
		},
		{
			name: "unknown revision",
			yaml: good + "- id: A61-NEW\n  doc: A61\n  revision: newest\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{`bad.yaml:9: A61-NEW: unknown revision "newest" (seed, latest or both)`},
		},
		{
			name: "unknown scope",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  scope: lab\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{`bad.yaml:4: A61-X: unknown scope "lab" (core or xds)`},
		},
		{
			name: "unknown doc",
			yaml: "- id: A99-X\n  doc: A99\n  revision: both\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{`bad.yaml:2: A99-X: unknown doc "A99"`},
		},
		{
			name: "missing section and text",
			yaml: good + "- id: A61-EMPTY\n  doc: A61\n  revision: both\n  section: \"\"\n  judged: black-box\n",
			want: []string{"bad.yaml:10: A61-EMPTY: missing section", "bad.yaml:7: A61-EMPTY: missing text"},
		},
		{
			name: "text over two lines",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: |\n    one\n    two\n  judged: black-box\n",
			want: []string{"bad.yaml:5: A61-X: text must be one line"},
		},
		{
			name: "text too long",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: " + strings.Repeat("word ", 40) + "\n  judged: black-box\n",
			want: []string{"bad.yaml:5: A61-X: text is 199 characters"},
		},
		{
			name: "revision-only without reason",
			yaml: "- id: A61-X\n  doc: A61\n  revision: latest\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{"bad.yaml:3: A61-X: a latest-only entry needs differs_from or a note"},
		},
		{
			name: "via on a seed entry",
			yaml: "- id: A56-X\n  doc: A56\n  revision: seed\n  section: S\n  text: T\n  note: n\n  via: A115\n  via_section: Proposal\n  judged: black-box\n",
			want: []string{"bad.yaml:7: A56-X: via is for latest entries"},
		},
		{
			name: "via from a document that does not amend",
			yaml: "- id: A61-X\n  doc: A61\n  revision: latest\n  section: S\n  text: T\n  note: n\n  via: A115\n  via_section: Proposal\n  judged: black-box\n",
			want: []string{"bad.yaml:7: A61-X: A115 does not amend A61"},
		},
		{
			name: "unknown field and field twice",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  txet: U\n  doc: A62\n  judged: black-box\n",
			want: []string{`bad.yaml:6: unknown field "txet"`, `bad.yaml:7: field "doc" given twice (first at line 2)`},
		},
		{
			name: "judged missing",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n",
			want: []string{"bad.yaml:1: A61-X: missing judged (black-box, reference-only, not-checkable)"},
		},
		{
			name: "judged unknown",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: grey-box\n",
			want: []string{`bad.yaml:6: A61-X: unknown judged "grey-box" (black-box, reference-only, not-checkable)`},
		},
		{
			name: "reference-only without a reason",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: reference-only\n",
			want: []string{"bad.yaml:6: A61-X: a reference-only entry needs judged_because"},
		},
		{
			name: "not-checkable without a reason",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: not-checkable\n",
			want: []string{"bad.yaml:6: A61-X: a not-checkable entry needs judged_because"},
		},
		{
			name: "black-box with a reason",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: black-box\n  judged_because: why\n",
			want: []string{"bad.yaml:7: A61-X: judged_because is for reference-only and not-checkable entries"},
		},
		{
			name: "reason too long",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: not-checkable\n  judged_because: " + strings.Repeat("word ", 50) + "\n",
			want: []string{"bad.yaml:7: A61-X: judged_because is 249 characters; say it in at most 240"},
		},
		{
			name: "field not a string",
			yaml: "- id: A61-X\n  doc: A61\n  revision: both\n  section: [a, b]\n  text: T\n  judged: black-box\n",
			want: []string{`bad.yaml:4: field "section" must be a single string`},
		},
		{
			name: "missing id",
			yaml: good + "- doc: A61\n  revision: both\n  section: S\n  text: T\n  judged: black-box\n",
			want: []string{"bad.yaml:7: missing id"},
		},
		{
			name: "not a sequence",
			yaml: "id: A61-X\n",
			want: []string{"bad.yaml:1: the catalogue must be a sequence of entries"},
		},
		{
			name: "entry not a mapping",
			yaml: good + "- just a string\n",
			want: []string{"bad.yaml:7: an entry must be a mapping"},
		},
		{
			name: "yaml syntax",
			yaml: good + "- id: A61-X\n  doc: [A61\n",
			want: []string{"bad.yaml:"},
		},
		{
			name: "empty",
			yaml: "",
			want: []string{"bad.yaml:1: empty catalogue"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("bad.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse accepted the catalogue (%d entries)", len(c.All()))
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, want *Error: %v", err, err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for _, w := range tt.want {
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, w)
				}
				if !found {
					t.Errorf("no problem starting %q in:\n%v", w, err)
				}
			}
		})
	}
}

// TestParse_GoodCatalogue verifies a minimal pair of revision entries
// parses, with defaults filled and lines recorded.
func TestParse_GoodCatalogue(t *testing.T) {
	const src = `# comment
- id: A56-OLD
  doc: A56
  revision: seed
  section: Child Lifetime Management
  text: old rule
  differs_from: A56-NEW
  judged: black-box
- id: A56-NEW
  doc: A56
  revision: latest
  scope: core
  section: Child Lifetime Management
  text: new rule
  differs_from: A56-OLD
  via: A115
  via_section: Proposal
  judged: reference-only
  judged_because: 'only the policy''s timer shows it'
`
	c, err := Parse("good.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	old, _ := c.ByID("A56-OLD")
	if old.Scope != Core || old.Line != 2 || old.DiffersFrom != "A56-NEW" || old.Judged != BlackBox || old.JudgedBecause != "" {
		t.Errorf("A56-OLD = %+v", old)
	}
	nw, _ := c.ByID("A56-NEW")
	if nw.Via != "A115" || nw.ViaSection != "Proposal" || nw.Line != 9 ||
		nw.Judged != ReferenceOnly || nw.JudgedBecause != "only the policy's timer shows it" {
		t.Errorf("A56-NEW = %+v", nw)
	}
	if got := c.ForDoc(A61); len(got) != 0 {
		t.Errorf("ForDoc(A61) = %v", got)
	}
}

// TestIsID verifies requirement labels are told from other labels.
func TestIsID(t *testing.T) {
	for s, want := range map[string]bool{
		"A61-HE-DELAY-DEFAULT": true,
		"A75-ANYTHING":         true,
		"A99-HE-DELAY":         false,
		"A61":                  false,
		"Slow":                 false,
		"a61-he-delay":         false,
		"A61-HE-DELAY-DEFAULT-AND-A-GREAT-DEAL-MORE": false,
	} {
		if got := IsID(s); got != want {
			t.Errorf("IsID(%q) = %v, want %v", s, got, want)
		}
	}
	for _, r := range All() {
		if !IsID(r.ID) {
			t.Errorf("IsID(%q) = false for a catalogue entry", r.ID)
		}
	}
}
