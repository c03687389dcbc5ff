package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/suites/a56"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/a62"
	"github.com/conformlab/conform/suites/a75"
	"github.com/conformlab/conform/suites/l9"
	"github.com/conformlab/conform/suites/spec"
)

// suite is one document's specs.
type suite struct {
	name  string // the --suite name: "a61"
	doc   requirement.Doc
	specs func() []spec.Spec
}

func suites() []suite {
	return []suite{
		{"a61", requirement.A61, a61.Specs},
		{"a62", requirement.A62, a62.Specs},
		{"a56", requirement.A56, a56.Specs},
		{"a75", requirement.A75, a75.Specs},
		{"l9", requirement.L9, l9.Specs},
	}
}

// selectSuites returns the suites named in a comma-separated list ("" is all).
func selectSuites(list string) ([]suite, error) {
	all := suites()
	if list == "" {
		return all, nil
	}
	var out []suite
	for _, name := range strings.Split(list, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		found := false
		for _, s := range all {
			if s.name == name {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			var names []string
			for _, s := range all {
				names = append(names, s.name)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("no suite %q (suites: %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}
