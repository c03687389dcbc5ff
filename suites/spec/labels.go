package spec

import (
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/conformlab/conform/harness/trace"
)

// Long reports whether s's lab run is labelled LabelLong.
func (s Spec) Long() bool {
	for _, l := range s.Labels {
		if isLong(l) {
			return true
		}
	}
	return false
}

func isLong(label string) bool { return strings.EqualFold(label, LabelLong) }

// Labels are the labels of s's run in mode m, which a label filter
// selects on: its document, its requirement IDs, its extra labels
// (LabelLong in the lab only) and the mode's (LabelSim, LabelLab).
func Labels(s Spec, m trace.Mode) []string {
	l := append([]string{string(s.Doc)}, s.Requirements()...)
	for _, x := range s.Labels {
		if m == Lab || !isLong(x) {
			l = append(l, x)
		}
	}
	return append(l, modeLabel(m))
}

// Selected reports whether the label filter (Ginkgo's syntax, already
// parsed from text; nil selects every run) selects s's run in mode m: the
// filter matches its Labels, and a LabelLong run only when text names
// LabelLong.
func Selected(s Spec, m trace.Mode, filter types.LabelFilter, text string) bool {
	labels := Labels(s, m)
	if filter != nil && !filter(labels) {
		return false
	}
	if m == Lab && s.Long() {
		return NamesLabel(text, LabelLong)
	}
	return true
}

// NamesLabel reports whether the label filter text names label as one of
// its terms (case aside, as Ginkgo compares labels): "Long",
// "A62 && Long", "!Long" name Long; "A62", a regular expression /Lo/ and
// "" do not.
func NamesLabel(text, label string) bool {
	terms := strings.FieldsFunc(text, func(r rune) bool {
		return strings.ContainsRune("&|!(), \t\n", r)
	})
	for _, t := range terms {
		if strings.EqualFold(t, label) {
			return true
		}
	}
	return false
}
