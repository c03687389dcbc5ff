package requirement

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The documents' files under shared/spec, per revision.
var specFiles = map[Doc]map[Revision]string{
	A61: {Seed: "A61-ipv4-ipv6-dualstack-backends.md", Latest: "related/A61-latest-revision.md"},
	A62: {Seed: "A62-pick-first-sticky-tf-and-shuffle.md", Latest: "related/A62-latest-revision.md"},
	A56: {Seed: "A56-priority-lb-policy.md", Latest: "related/A56-latest-revision.md"},
	A75: {Seed: "A75-xds-aggregate-cluster-fixes.md", Latest: "related/A75-latest-revision.md"},
	// L9 has one revision: seed and latest are the same document.
	L9: {Seed: "L9-go-resolver-balancer-api.md", Latest: "L9-go-resolver-balancer-api.md"},
}

// amendingFiles are the documents that amend a latest revision.
var amendingFiles = map[string]string{
	"A115": "related/A115-remove-priority-lb-child-policy-cache.md",
}

// wordingOnly lists normative sections whose text differs between seed and
// latest without changing what an implementation must do, so they carry no
// seed/latest pair of entries.
var wordingOnly = map[Doc]map[string]string{
	A61: {"Ring Hash": "latest names A42 as the origin of the one-at-a-time connection logic; the rule is unchanged"},
	A62: {"Use sticky-TF by default": "latest changes a link's text from 'here' to 'above'"},
	A75: {"Temporary environment variable protection": "seed finds no guard needed, latest finds one infeasible; either way nothing is guarded (A75-NO-ENV-GUARD)"},
}

// specDir finds shared/spec: $CONFORM_SPEC_DIR, or ../../../shared/spec
// from this package. It skips the test when neither exists.
func specDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CONFORM_SPEC_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "spec")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("no spec directory at %s (set CONFORM_SPEC_DIR to check the catalogue against the gRFCs)", dir)
	}
	return dir
}

// section is one heading of a markdown document and the text up to the
// next heading of any level.
type section struct {
	heading   string
	level     int
	normative bool // inside "## Proposal"
	body      string
}

var (
	headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*$`)
	mustRe    = regexp.MustCompile(`(?i)\b(must|should)\b`)
)

// readSections splits a gRFC into sections, ignoring fenced code.
func readSections(t *testing.T, path string) []section {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []section
	inCode, inProposal := false, false
	var body strings.Builder
	flush := func() {
		if len(out) > 0 {
			out[len(out)-1].body = body.String()
		}
		body.Reset()
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		if m := headingRe.FindStringSubmatch(line); m != nil {
			flush()
			level := len(m[1])
			if level <= 2 {
				inProposal = level == 2 && m[2] == "Proposal"
			}
			out = append(out, section{heading: m[2], level: level, normative: inProposal})
			continue
		}
		body.WriteString(line)
		body.WriteString("\n")
	}
	flush()
	return out
}

func headings(secs []section) []string {
	var out []string
	for _, s := range secs {
		out = append(out, s.heading)
	}
	return out
}

// TestSpec_EveryNormativeSectionWithMustOrShouldHasARequirement verifies
// each section of the documents' Proposal that says "must" or "should"
// (in any case) has at least one requirement of a revision that holds it.
// Background, Rationale and Implementation are not normative and are not
// scanned.
func TestSpec_EveryNormativeSectionWithMustOrShouldHasARequirement(t *testing.T) {
	dir := specDir(t)
	for doc, files := range specFiles {
		for _, rev := range []Revision{Seed, Latest} {
			for _, s := range readSections(t, filepath.Join(dir, files[rev])) {
				if !s.normative || !mustRe.MatchString(s.body) {
					continue
				}
				if !slices.ContainsFunc(ForDoc(doc), func(r Requirement) bool {
					return r.AppliesTo(rev) && r.Section == s.heading
				}) {
					t.Errorf("%s (%s, %s): section %q has MUST/SHOULD statements but no requirement", doc, rev, files[rev], s.heading)
				}
			}
		}
	}
	for via, file := range amendingFiles {
		for _, s := range readSections(t, filepath.Join(dir, file)) {
			if !s.normative || !mustRe.MatchString(s.body) {
				continue
			}
			if !slices.ContainsFunc(All(), func(r Requirement) bool {
				return r.Via == via && r.ViaSection == s.heading
			}) {
				t.Errorf("%s (%s): section %q has MUST/SHOULD statements but no requirement with via: %s", via, file, s.heading, via)
			}
		}
	}
}

// TestSpec_SectionsAreHeadingsOfTheirRevisions verifies every entry's
// section is a heading of each revision it holds in, and via_section a
// heading of the amending document, so citations can be followed.
func TestSpec_SectionsAreHeadingsOfTheirRevisions(t *testing.T) {
	dir := specDir(t)
	heads := map[Doc]map[Revision][]string{}
	for doc, files := range specFiles {
		heads[doc] = map[Revision][]string{}
		for rev, f := range files {
			heads[doc][rev] = headings(readSections(t, filepath.Join(dir, f)))
		}
	}
	for _, r := range All() {
		files, ok := specFiles[r.Doc]
		if !ok {
			t.Errorf("catalogue.yaml:%d: %s: no spec files known for %s", r.Line, r.ID, r.Doc)
			continue
		}
		for _, rev := range []Revision{Seed, Latest} {
			if r.AppliesTo(rev) && !slices.Contains(heads[r.Doc][rev], r.Section) {
				t.Errorf("catalogue.yaml:%d: %s: section %q is not a heading of %s", r.Line, r.ID, r.Section, files[rev])
			}
		}
		if r.Via != "" {
			f := amendingFiles[r.Via]
			if !slices.Contains(headings(readSections(t, filepath.Join(dir, f))), r.ViaSection) {
				t.Errorf("catalogue.yaml:%d: %s: via_section %q is not a heading of %s", r.Line, r.ID, r.ViaSection, f)
			}
		}
	}
}

// TestSpec_ChangedSectionsHaveRevisionEntries verifies that every
// normative section whose text differs between seed and latest (or exists
// in one only) has a seed or latest entry, unless it is listed in
// wordingOnly with the reason. A new revision of a document fails here
// until its changes are catalogued.
func TestSpec_ChangedSectionsHaveRevisionEntries(t *testing.T) {
	dir := specDir(t)
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for doc, files := range specFiles {
		bodies := map[Revision]map[string]string{}
		for rev, f := range files {
			bodies[rev] = map[string]string{}
			for _, s := range readSections(t, filepath.Join(dir, f)) {
				if s.normative {
					bodies[rev][s.heading] = norm(s.body)
				}
			}
		}
		changed := map[string]bool{}
		for _, rev := range []Revision{Seed, Latest} {
			for h, b := range bodies[rev] {
				if o, ok := bodies[other(rev)][h]; !ok || o != b {
					changed[h] = true
				}
			}
		}
		for h := range changed {
			if _, ok := wordingOnly[doc][h]; ok {
				continue
			}
			if !slices.ContainsFunc(ForDoc(doc), func(r Requirement) bool {
				return r.Revision != Both && r.Section == h
			}) {
				t.Errorf("%s: section %q differs between %s and %s but has no seed or latest entry (nor a wordingOnly reason)", doc, h, files[Seed], files[Latest])
			}
		}
		for h := range wordingOnly[doc] {
			if !changed[h] {
				t.Errorf("%s: wordingOnly lists %q, which no longer differs between revisions", doc, h)
			}
		}
	}
}
