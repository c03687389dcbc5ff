package simjudge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// TestMain_JudgesGRPCGoPickFirstInTheSimulator runs Main as the generated
// program does, on grpc-go's own pick_first (no user module, no mapping):
// A61's Happy Eyeballs scenario gives a trace that conform's checks judge
// a pass, and an xDS scenario is not-applicable with the reason.
func TestMain_JudgesGRPCGoPickFirstInTheSimulator(t *testing.T) {
	out := t.TempDir()
	ids := []string{"A61/he-dropped-ipv6", "A61/xds-dual-stack-endpoint", "A61/no-such-spec"}
	req, _ := json.Marshal(Request{Name: "go:grpc-go-itself", Specs: ids, Out: out})
	t.Setenv(RequestEnv, string(req))
	Main(t)
	byID := specsByID()
	results := make([]Result, len(ids))
	for i := range ids {
		b, err := os.ReadFile(filepath.Join(out, []string{"0", "1", "2"}[i]+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &results[i]); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := trace.ReadFile(results[0].Trace)
	if err != nil || results[0].Err != "" {
		t.Fatalf("he-dropped-ipv6: %+v, %v", results[0], err)
	}
	if tr.Header.Impl != "go:grpc-go-itself" || tr.Header.Mode != trace.ModeSim {
		t.Errorf("header %s %s, want go:grpc-go-itself in the simulator", tr.Header.Impl, tr.Header.Mode)
	}
	o := spec.Judge(byID[ids[0]], spec.Sim, tr, nil)
	for _, r := range o.Results {
		if r.Requirement == "A61-HE-DELAY-DEFAULT" && r.Verdict != verdict.Pass {
			t.Errorf("A61-HE-DELAY-DEFAULT on grpc-go's pick_first in the simulator: %s %s", r.Verdict, r.Evidence)
		}
	}
	if results[1].NotApplicable == "" {
		t.Errorf("an xDS scenario: %+v, want not-applicable with the reason", results[1])
	}
	if results[2].Err == "" {
		t.Errorf("an unknown spec: %+v, want an error", results[2])
	}
}
