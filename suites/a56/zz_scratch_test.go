package a56

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
)

func TestScratch(t *testing.T) {
	name, mode := os.Getenv("SPEC"), trace.Mode(os.Getenv("MODE"))
	for _, s := range Specs() {
		if s.Name() != name {
			continue
		}
		tr, err := runner.Run(context.Background(), s.Scenario, runner.Reference, mode, runner.Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tr.Events {
			if e.Kind == trace.KindPick || e.Kind == trace.KindLog {
				continue
			}
			fmt.Println(e.String())
		}
	}
}
