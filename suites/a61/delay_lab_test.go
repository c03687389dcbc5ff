package a61_test

import (
	"context"
	"os"
	"testing"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/spec"
)

// TestLab_DelayCheckTellsA270msDelay verifies that the lab judges the
// Connection Attempt Delay to spec.LabTimer: he-dropped-ipv6's check of
// A61-HE-DELAY-DEFAULT (250 ms) fails the reference's pick_first configured
// with a 270 ms delay and passes it with the default, in the lab.
func TestLab_DelayCheckTellsA270msDelay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a61: the lab needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	var s spec.Spec
	for _, sp := range a61.Specs() {
		if sp.Name() == "he-dropped-ipv6" {
			s = sp
		}
	}
	if s.Scenario == nil {
		t.Fatal("no spec he-dropped-ipv6")
	}
	for _, c := range []struct {
		config string
		want   verdict.Verdict
	}{
		{`{}`, verdict.Pass},
		{`{"connectionAttemptDelay":"270ms"}`, verdict.Fail},
	} {
		sc := *s.Scenario
		sc.Client.LBConfig = c.config
		tr, err := runner.Run(context.Background(), &sc, runner.Reference, trace.ModeLab, runner.Options{Seed: 1})
		o := spec.Judge(s, trace.ModeLab, tr, err)
		var got []verdict.Result
		for _, r := range o.Results {
			if r.Requirement == "A61-HE-DELAY-DEFAULT" {
				got = append(got, r)
			}
		}
		if len(got) != 1 || got[0].Verdict != c.want {
			t.Errorf("pick_first %s, judged against the 250 ms default: %+v, want one %s", c.config, got, c.want)
		}
	}
}
