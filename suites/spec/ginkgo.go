package spec

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// The label registry: every label a suite may use besides document names
// and requirement IDs.
const (
	LabelSim  = "Sim"  // runs in the simulator
	LabelLab  = "Lab"  // runs in the network lab (needs root)
	LabelSlow = "Slow" // takes more than a few seconds of wall time in the lab
	LabelIPv6 = "IPv6" // needs IPv6
	LabelXDS  = "xDS"  // needs the xDS control plane
	// LabelLong: the lab run lasts half an hour or more (a client's
	// default timer, as A62's recommended 30-minute idle timeout). It
	// labels the lab run only (the simulator's time is virtual, so its run
	// is cheap), and such a run is left out of conform run, verify,
	// record and the Ginkgo suites unless a label filter names it
	// (Selected).
	LabelLong = "Long"
)

// Describe turns a document's specs into Ginkgo containers: one Describe per
// section, labelled with the document; in it, one Ordered container per
// spec with an It per mode (labelled with the requirement IDs and the mode)
// and, when both modes run, an It checking that simulator and lab agree.
// Call it at the top level of a suite's test file:
//
//	var _ = spec.Describe(requirement.A61, a61.Specs())
func Describe(doc requirement.Doc, specs []Spec) bool {
	var sections []string
	bySection := map[string][]Spec{}
	for _, s := range specs {
		if _, ok := bySection[s.Section]; !ok {
			sections = append(sections, s.Section)
		}
		bySection[s.Section] = append(bySection[s.Section], s)
	}
	return ginkgo.Describe(string(doc), ginkgo.Label(string(doc)), func() {
		for _, sec := range sections {
			ginkgo.Describe(sec, func() {
				for _, s := range bySection[sec] {
					describeSpec(s)
				}
			})
		}
	})
}

func describeSpec(s Spec) {
	traces := map[trace.Mode]*trace.Trace{}
	labels := append(s.Requirements(), slices.DeleteFunc(slices.Clone(s.Labels), isLong)...)
	ginkgo.Describe(s.Name(), ginkgo.Ordered, ginkgo.ContinueOnFailure, ginkgo.Label(labels...), func() {
		for _, m := range []trace.Mode{Sim, Lab} {
			if !s.RunsIn(m) {
				continue
			}
			ginkgo.It(fmt.Sprintf("[%s] %s", m, describeChecks(s)), ginkgo.Label(modeLabels(s, m)...), func(ctx ginkgo.SpecContext) {
				skipLabWithoutRoot(m)
				skipLongUnasked(s, m)
				gomega.Expect(s.Validate()).To(gomega.Succeed())
				o := RunSteady(ctx, s, m, runner.Reference, func(unsteady Outcome, run int) {
					fmt.Fprintf(ginkgo.GinkgoWriter, "the machine stalled near a timer judged: run %d of at most %d\n%s", run, UnsteadyRuns, verdict.Failed(unsteady.Results))
				})
				traces[m] = o.Trace
				printTrace(o.Trace)
				dir, err := TracesDir()
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				o.CheckGoldenOutcome(dir)
				if OnlyUnsteady(o.Results) {
					ginkgo.Skip(fmt.Sprintf("in %d runs the machine stalled near a timer judged; the lab could not judge it:\n%s", UnsteadyRuns, verdict.Failed(o.Results)))
				}
				if msg := verdict.Failed(o.Results); msg != "" {
					ginkgo.Fail(msg)
				}
			})
		}
		if s.Agreement != nil && s.RunsIn(Sim) && s.RunsIn(Lab) {
			ginkgo.It("the simulator agrees with the lab", ginkgo.Label(modeLabels(s, Lab)...), func() {
				skipLabWithoutRoot(Lab)
				skipLongUnasked(s, Lab)
				if traces[Sim] == nil || traces[Lab] == nil {
					ginkgo.Skip("a mode's run did not produce a trace; its own spec says why")
				}
				err := CheckAgreement(s, traces[Sim], traces[Lab])
				if errors.Is(err, ErrUnsteadyAgreement) {
					ginkgo.Skip(err.Error())
				}
				gomega.Expect(err).To(gomega.Succeed())
			})
		}
	})
}

func describeChecks(s Spec) string {
	if s.Observation {
		return "observation: " + strings.Join(s.Requirements(), ", ")
	}
	return strings.Join(s.Requirements(), ", ")
}

func modeLabel(m trace.Mode) string {
	if m == Lab {
		return LabelLab
	}
	return LabelSim
}

// modeLabels are the labels of s's It in mode m: the mode's, and LabelLong
// on a long spec's lab run.
func modeLabels(s Spec, m trace.Mode) []string {
	if m == Lab && s.Long() {
		return []string{LabelLab, LabelLong}
	}
	return []string{modeLabel(m)}
}

// skipLongUnasked skips a long spec's lab run unless the suite's label
// filter names LabelLong (Ginkgo has no label left out by default).
func skipLongUnasked(s Spec, m trace.Mode) {
	if m == Lab && s.Long() && !NamesLabel(ginkgo.GinkgoLabelFilter(), LabelLong) {
		ginkgo.Skip(fmt.Sprintf("lab: lasts half an hour or more (label %s); runs only when the label filter names it: ginkgo --label-filter '%s'", LabelLong, LabelLong))
	}
}

func skipLabWithoutRoot(m trace.Mode) {
	if m == Lab && os.Geteuid() != 0 {
		ginkgo.Skip("lab: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
}

// printTrace writes the trace to the ginkgo.GinkgoWriter, which Ginkgo shows only
// when the spec fails.
func printTrace(tr *trace.Trace) {
	if tr == nil {
		return
	}
	fmt.Fprintf(ginkgo.GinkgoWriter, "trace of %s (%s, %d events):\n", tr.Header.Scenario.Name, tr.Header.Mode, len(tr.Events))
	for _, e := range tr.Events {
		fmt.Fprintln(ginkgo.GinkgoWriter, "  "+e.String())
	}
}
