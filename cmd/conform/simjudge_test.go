package main

import (
	"errors"
	"path/filepath"
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
