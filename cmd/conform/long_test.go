package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// TestJobs_LongLabRunsOnlyWhenNamed verifies how run, record and verify
// choose the lab runs labelled Long: left out (and said so) unless the
// label filter names Long; the simulated run of the same spec is chosen
// as any other.
func TestJobs_LongLabRunsOnlyWhenNamed(t *testing.T) {
	names := func(jobs []spec.Job, m trace.Mode) map[string]bool {
		out := map[string]bool{}
		for _, j := range jobs {
			if j.Mode == m {
				out[j.Spec.Name()] = true
			}
		}
		return out
	}
	f := &runFlags{suite: "a62"}
	jobs, err := f.jobs([]trace.Mode{spec.Sim, spec.Lab})
	if err != nil {
		t.Fatal(err)
	}
	if names(jobs, spec.Lab)["idle-timeout-default"] || !names(jobs, spec.Sim)["idle-timeout-default"] {
		t.Errorf("no filter: idle-timeout-default chosen in the lab %v, in the simulator %v; want the simulator only",
			names(jobs, spec.Lab)["idle-timeout-default"], names(jobs, spec.Sim)["idle-timeout-default"])
	}
	if !strings.Contains(f.longNote(), "idle-timeout-default") {
		t.Errorf("no filter: the note %q does not name the lab run left out", f.longNote())
	}

	f = &runFlags{suite: "a62", labelFilter: "A62-IDLE-TIMEOUT-DEFAULT"}
	_, err = f.jobs([]trace.Mode{spec.Lab})
	var usage usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "idle-timeout-default") || !strings.Contains(err.Error(), "&& Long") {
		t.Errorf("a filter matching it without naming Long: %v; want a usage error that names the run left out and how to run it", err)
	}

	f = &runFlags{suite: "a62", labelFilter: "A62-IDLE-TIMEOUT-DEFAULT && Long"}
	jobs, err = f.jobs([]trace.Mode{spec.Sim, spec.Lab})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Spec.Name() != "idle-timeout-default" || jobs[0].Mode != spec.Lab || f.longNote() != "" {
		t.Errorf("named: %d jobs (%v), note %q; want the lab run of idle-timeout-default alone, nothing left out", len(jobs), names(jobs, spec.Lab), f.longNote())
	}
}
