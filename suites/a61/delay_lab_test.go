package a61_test

import (
	"context"
	"os"
	"testing"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// TestLab_DelayCheckTellsA270msDelay verifies that the lab judges the
// Connection Attempt Delay to spec.LabTimer: he-dropped-ipv6's check of
// A61-HE-DELAY-DEFAULT (250 ms) fails the reference's pick_first configured
// with a 270 ms delay and passes it with the default, in the lab, both in
// conform's process and as a driver process (the Go driver, whose own stall
// watch lets it be judged to LabTimer too). A run in which the machine
// stalled near the delay is inconclusive (a stall watch saw it): the test
// is skipped then, with the reason; it never accepts a pass for 270 ms.
func TestLab_DelayCheckTellsA270msDelay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a61: the lab needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	s := specNamed(t, "he-dropped-ipv6")
	cache := t.TempDir()
	for name, impl := range map[string]runner.Impl{
		"in-process": runner.Reference,
		"driver":     runner.Driver{Impl: driver.Release{Name: driver.Reference}, Cache: cache, Source: driver.FindSource()},
	} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				config string
				want   verdict.Verdict
			}{
				{`{}`, verdict.Pass},
				{`{"connectionAttemptDelay":"270ms"}`, verdict.Fail},
			} {
				sc := *s.Scenario
				sc.Client.LBConfig = c.config
				tr, err := runner.Run(context.Background(), &sc, impl, trace.ModeLab, runner.Options{Seed: 1})
				if err != nil {
					t.Fatalf("pick_first %s: %v", c.config, err)
				}
				if got := spec.TimerWithin(tr); got != spec.LabTimer {
					t.Fatalf("pick_first %s: judged to ±%v, want spec.LabTimer (%v)", c.config, got, spec.LabTimer)
				}
				r := delayDefault(t, s, tr)
				switch {
				case r.Verdict == verdict.Inconclusive:
					t.Skipf("pick_first %s: inconclusive: %s", c.config, r.Evidence)
				case r.Verdict != c.want:
					t.Errorf("pick_first %s, judged against the 250 ms default: %s %q, want %s\n%s", c.config, r.Verdict, r.Evidence, c.want, spec.Render(spec.Attempts(tr.Events)))
				}
			}
		})
	}
}
