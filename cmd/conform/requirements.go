package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/conformlab/conform/harness/requirement"
)

const requirementsUsage = `Usage:
  conform requirements [--doc A61] [--width 100] [--json]
      Prints the requirement catalogue — every checkable statement of A61,
      A62, A56 and A75, with its document, revision and section — and, for each,
      how it is judged (black-box: on any implementation, from what a client
      shows from outside; reference-only: only the reference's policy events
      show it; not-checkable: nothing can tell, with the reason) and the specs
      that check it. Requirements no spec checks are listed as UNCOVERED, never
      hidden. Then the counts per document: black-box, reference-only,
      not-checkable, uncovered.

Flags:
`

func runRequirements(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("requirements", flag.ContinueOnError)
	fs.SetOutput(stderr)
	doc := fs.String("doc", "", "only this document (A61, A62, A56, A75)")
	width := fs.Int("width", requirement.DefaultWidth, "the table's width in columns")
	asJSON := fs.Bool("json", false, "print the catalogue and the counts as JSON instead of the table")
	fs.Usage = func() { fmt.Fprint(stderr, requirementsUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitError{2}
	}
	reqs := requirement.All()
	if *doc != "" {
		reqs = requirement.ForDoc(requirement.Doc(strings.ToUpper(*doc)))
		if len(reqs) == 0 {
			return fmt.Errorf("requirements: no requirements for document %q", *doc)
		}
	}
	checkedBy := map[string][]string{}
	for _, su := range suites() {
		for _, sp := range su.specs() {
			for _, id := range sp.Requirements() {
				if r, known := requirement.ByID(id); known && *doc != "" && !strings.EqualFold(string(r.Doc), *doc) {
					continue // another document's: not this table's business
				}
				checkedBy[id] = append(checkedBy[id], su.name+"/"+sp.Name())
			}
		}
	}
	c := requirement.NewCoverage(reqs, checkedBy)
	if *asJSON {
		return c.JSON(stdout)
	}
	return c.Render(stdout, *width)
}
