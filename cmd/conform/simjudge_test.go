package main

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/spec"
)

// TestJudgeSimResult_ProgramEndedEarly verifies that a scenario the
// simulator's program never wrote a result for (it ended: the user's
// balancer panicked) is an error quoting the program's last lines.
func TestJudgeSimResult_ProgramEndedEarly(t *testing.T) {
	s := a61.Specs()[1]
	o := judgeSimResult(s, filepath.Join(t.TempDir(), "0.json"), errors.New("exit status 2"), []byte("panic: acme: boom\n\ngoroutine 7 [running]:\n"))
	for _, r := range o.Results {
		if r.Verdict != verdict.Error || !strings.Contains(r.Evidence, "ended before this scenario ran (exit status 2)") || !strings.Contains(r.Evidence, "panic: acme: boom") {
			t.Errorf("%s: %s %q, want an error quoting the panic", r.Requirement, r.Verdict, r.Evidence)
		}
	}
	if o.Mode != spec.Sim {
		t.Errorf("mode %s, want sim", o.Mode)
	}
}

// TestByEnv_OneProcessPerSetOfSwitches verifies how the simulator's
// program is started for a user's balancer: one process per set of gRPC
// switches the scenarios set (none is a set too), each in the order its
// first scenario comes, every scenario in exactly one.
func TestByEnv_OneProcessPerSetOfSwitches(t *testing.T) {
	with := func(name string, env map[string]string) spec.Job {
		s := a61.Specs()[0]
		sc := *s.Scenario
		sc.Name, sc.Client.Env = name, env
		s.Scenario = &sc
		return spec.Job{Spec: s, Mode: spec.Sim}
	}
	on := map[string]string{"GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG": "true"}
	both := map[string]string{"GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG": "true", "GRPC_EXPERIMENTAL_XDS_DUALSTACK_ENDPOINTS": "true"}
	jobs := []spec.Job{with("a", nil), with("b", on), with("c", map[string]string{}), with("d", both), with("e", map[string]string{"GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG": "true"})}
	got := byEnv(jobs)
	want := [][]int{{0, 2}, {1, 4}, {3}}
	if len(got) != len(want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("group %d: %v, want %v", i, got[i], want[i])
		}
	}
}
