// Package spec is how conform's suites are written: a Spec is one scenario,
// the document section it exercises, and the checks it makes, each tied to a
// requirement of the catalogue (harness/requirement).
//
// A Spec is data. The Ginkgo suites (suites/a61, …) turn each one into an It
// per mode (Describe generates them); `conform run` evaluates the very same
// Specs without Ginkgo. So a requirement is checked in one place, whichever
// way the suites are run.
//
// The package also holds what the checks of every suite read, each with
// one definition: evidence.go (the channel's states, connection attempts
// and failures, re-resolutions, picks, whoever produced the trace), rpc.go
// (sending RPCs and reading their results), xds.go (the xDS state of the
// world and the client's ACKs and NACKs), subchannel.go (the policy's
// subchannels), helpers.go (addresses, tolerances, failure messages).
package spec

import (
	"fmt"
	"strings"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// The modes a spec runs in.
var (
	Sim = trace.ModeSim
	Lab = trace.ModeLab
)

// Check is verdict.Check, the one definition of a check: an alias, so that
// the suites, which write spec.Check{…} in most of their files, need not
// change.
type Check = verdict.Check

// Spec is one scenario of a suite and the requirements it checks.
type Spec struct {
	Doc     requirement.Doc
	Section string // the document's section heading, as in the catalogue
	// Observation marks a spec for a shape the documents are silent about:
	// what happens is recorded in its golden trace, and its checks (if any)
	// state what was observed rather than a requirement.
	Observation bool
	Labels      []string // extra labels: Slow, IPv6, …
	Scenario    *scenario.Scenario
	// Modes the spec runs in; nil means both.
	Modes  []trace.Mode
	Checks []Check
	// Agreement says how the simulated and the lab trace must agree (the
	// simulator's truthfulness); nil means they are not compared.
	Agreement *compare.Options
	// LabGolden says how a fresh lab trace is compared with the golden lab
	// trace; nil means lab goldens are kept for review only. Simulated
	// traces are always compared with their golden trace, exactly.
	LabGolden *compare.Options
	// Seed for the run's randomness; zero means 1.
	Seed uint64
}

// Name is the scenario's name: also the stem of the golden trace files.
func (s Spec) Name() string { return s.Scenario.Name }

// Subject is what s's results in mode m are about.
func (s Spec) Subject(m trace.Mode) verdict.Subject {
	return verdict.Subject{Spec: s.Name(), Doc: string(s.Doc), Mode: m}
}

// RunsIn reports whether the spec runs in mode m.
func (s Spec) RunsIn(m trace.Mode) bool {
	if len(s.Modes) == 0 {
		return true
	}
	for _, x := range s.Modes {
		if x == m {
			return true
		}
	}
	return false
}

// Requirements lists the IDs the spec checks, in check order, once each.
func (s Spec) Requirements() []string {
	var ids []string
	seen := map[string]bool{}
	for _, c := range s.Checks {
		if !seen[c.Requirement] {
			seen[c.Requirement] = true
			ids = append(ids, c.Requirement)
		}
	}
	return ids
}

// SeedOrDefault is the seed the spec runs with.
func (s Spec) SeedOrDefault() uint64 {
	if s.Seed == 0 {
		return 1
	}
	return s.Seed
}

// Validate checks that the spec names its document, a section and only
// requirements of the catalogue that belong to its document.
func (s Spec) Validate() error {
	if s.Scenario == nil {
		return fmt.Errorf("spec in %s %q has no scenario", s.Doc, s.Section)
	}
	if s.Section == "" {
		return fmt.Errorf("spec %s: no section", s.Name())
	}
	if len(s.Checks) == 0 && !s.Observation {
		return fmt.Errorf("spec %s: no checks (an observation must say so)", s.Name())
	}
	for _, c := range s.Checks {
		r, ok := requirement.ByID(c.Requirement)
		if !ok {
			return fmt.Errorf("spec %s: %q is not in the requirement catalogue", s.Name(), c.Requirement)
		}
		if r.Doc != s.Doc && !strings.HasPrefix(c.Requirement, string(s.Doc)) {
			return fmt.Errorf("spec %s (%s) checks %s of %s", s.Name(), s.Doc, c.Requirement, r.Doc)
		}
		if c.Assert == nil {
			return fmt.Errorf("spec %s: check of %s has no Assert", s.Name(), c.Requirement)
		}
	}
	return nil
}
