package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// Disagreement is a requirement whose catalogue entry and checks disagree
// on how it is judged (requirement.Judged).
type Disagreement struct {
	Requirement string
	Judged      requirement.Judged
	Spec        string // the spec whose checks disagree; "" when it is all of them
	Msg         string
}

func (d Disagreement) String() string {
	if d.Spec == "" {
		return fmt.Sprintf("%s (%s): %s", d.Requirement, d.Judged, d.Msg)
	}
	return fmt.Sprintf("%s (%s), spec %s: %s", d.Requirement, d.Judged, d.Spec, d.Msg)
}

// JudgedDisagreements holds the catalogue's word on how each requirement is
// judged against the checks of specs that judge it:
//   - a black-box requirement with checks has one that works without the
//     policy's events (a check whose Needs leave out trace.SourcePolicy:
//     the backends' or the capture's evidence is anyone's);
//   - every check of a reference-only requirement needs the policy's events
//     (one that does not is black-box, or should say what it reads);
//   - a not-checkable requirement has no checks.
//
// Requirements of reqs no spec checks agree by definition (they are
// uncovered); checks naming no requirement of reqs are Validate's business.
// The result is in catalogue order, then spec order.
func JudgedDisagreements(reqs []requirement.Requirement, specs []Spec) []Disagreement {
	type use struct {
		spec, check string
		needs       bool
	}
	uses := map[string][]use{}
	for _, s := range specs {
		names := verdict.CheckNames(s.Checks)
		for i, c := range s.Checks {
			uses[c.Requirement] = append(uses[c.Requirement], use{s.Name(), names[i], slices.Contains(c.Needs, trace.SourcePolicy)})
		}
	}
	var out []Disagreement
	for _, r := range reqs {
		us := uses[r.ID]
		if len(us) == 0 {
			continue
		}
		switch r.Judged {
		case requirement.BlackBox:
			if !slices.ContainsFunc(us, func(u use) bool { return !u.needs }) {
				var specs []string
				for _, u := range us {
					if !slices.Contains(specs, u.spec) {
						specs = append(specs, u.spec)
					}
				}
				out = append(out, Disagreement{r.ID, r.Judged, "", fmt.Sprintf(
					"every check reads the policy's events (Needs), in %s: none judges it from outside; "+
						"add one that does, or judge it reference-only", strings.Join(specs, ", "))})
			}
		case requirement.ReferenceOnly:
			for _, u := range us {
				if !u.needs {
					out = append(out, Disagreement{r.ID, r.Judged, u.spec, fmt.Sprintf(
						"check %sdoes not need the policy's events, so it judges third parties too: the requirement is black-box, "+
							"or the check reads the policy's events and should declare Needs", checkLabel(u.check))})
				}
			}
		case requirement.NotCheckable:
			for _, u := range us {
				out = append(out, Disagreement{r.ID, r.Judged, u.spec, fmt.Sprintf(
					"check %sjudges a requirement the catalogue says nothing can check: "+
						"judge it black-box or reference-only, or drop the check", checkLabel(u.check))})
			}
		}
	}
	return out
}

func checkLabel(name string) string {
	if name == "" {
		return ""
	}
	return name + " "
}
