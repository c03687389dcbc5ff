package spec

import (
	"slices"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
)

func pass(gomega.Gomega, *trace.Trace) {}

// TestNamesLabel verifies which label filters name a label: as one of
// their terms, whatever the case, negated or not; never as part of
// another term or through a regular expression.
func TestNamesLabel(t *testing.T) {
	for _, c := range []struct {
		filter string
		want   bool
	}{
		{"Long", true},
		{"long", true},
		{"A62 && Long", true},
		{"(A62-IDLE-TIMEOUT-DEFAULT||Long)", true},
		{"!Long", true},
		{"A62, Long", true},
		{"", false},
		{"A62", false},
		{"Longer", false},
		{"/Lo/", false},
	} {
		if got := NamesLabel(c.filter, LabelLong); got != c.want {
			t.Errorf("NamesLabel(%q, Long) = %v, want %v", c.filter, got, c.want)
		}
	}
}

// TestSelected_LongLabRunOnlyWhenNamed verifies that a Long spec's lab
// run is selected only by a filter that names Long and matches it, while
// its simulated run, which does not carry the label, is selected as any
// other; a spec without the label is unaffected.
func TestSelected_LongLabRunOnlyWhenNamed(t *testing.T) {
	long := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: pass})
	long.Labels = []string{LabelSlow, LabelLong}
	plain := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: pass})
	if slices.Contains(Labels(long, Sim), LabelLong) || !slices.Contains(Labels(long, Lab), LabelLong) {
		t.Errorf("Labels: sim %v, lab %v: want Long on the lab run only", Labels(long, Sim), Labels(long, Lab))
	}
	for _, c := range []struct {
		filter string
		s      Spec
		m      trace.Mode
		want   bool
		why    string
	}{
		{"", long, Sim, true, "no filter: the simulated run"},
		{"", long, Lab, false, "no filter: not the lab run"},
		{"A61-HE-DELAY-DEFAULT", long, Lab, false, "a filter matching it without naming Long"},
		{"A61-HE-DELAY-DEFAULT", long, Sim, true, "the simulated run, by its requirement"},
		{"A61-HE-DELAY-DEFAULT && Long", long, Lab, true, "named and matched"},
		{"Long", long, Lab, true, "named and matched"},
		{"Long", long, Sim, false, "the simulated run has no Long label"},
		{"!Long", long, Lab, false, "named, but the filter excludes it"},
		{"Long && A56", long, Lab, false, "named, but the filter does not match it"},
		{"", plain, Lab, true, "a spec without Long"},
		{"Slow", plain, Lab, false, "a filter not matching it"},
	} {
		var f types.LabelFilter
		if c.filter != "" {
			var err error
			if f, err = types.ParseLabelFilter(c.filter); err != nil {
				t.Fatal(err)
			}
		}
		if got := Selected(c.s, c.m, f, c.filter); got != c.want {
			t.Errorf("Selected(%s, %s, %q) = %v, want %v (%s)", c.s.Name(), c.m, c.filter, got, c.want, c.why)
		}
	}
}
