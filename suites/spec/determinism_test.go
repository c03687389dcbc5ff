package spec_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/a56"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/a62"
	"github.com/conformlab/conform/suites/spec"
)

// TestSimulatedTraces_RegenerateByteForByte verifies, for every spec of every
// suite, that two simulated runs give the same canonical bytes: regenerating
// the golden traces without a change gives no diff.
func TestSimulatedTraces_RegenerateByteForByte(t *testing.T) {
	var all []spec.Spec
	for _, specs := range [][]spec.Spec{a61.Specs(), a62.Specs(), a56.Specs()} {
		all = append(all, specs...)
	}
	if len(all) == 0 {
		t.Fatal("no specs registered")
	}
	for _, s := range all {
		if !s.RunsIn(spec.Sim) {
			continue
		}
		var out [2][]byte
		for i := range out {
			tr, err := runner.Run(context.Background(), s.Scenario, runner.Reference, spec.Sim, runner.Options{Seed: s.SeedOrDefault()})
			if err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			if out[i], err = trace.Canonical(tr); err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("%s: two simulated runs with seed %d differ", s.Name(), s.SeedOrDefault())
		}
	}
}
