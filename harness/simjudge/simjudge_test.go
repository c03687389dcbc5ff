package simjudge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/balancer"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// testPickFirst is a user's policy as this test's own package registers
// it: grpc-go's pick_first under another name, built from outside grpc-go.
type testPickFirst struct{}

func (testPickFirst) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return balancer.Get("pick_first").Build(cc, opts)
}

func (testPickFirst) Name() string { return "test_pick_first" }

func init() { balancer.Register(testPickFirst{}) }

// TestMain_JudgesAUsersPolicyInTheSimulator runs Main as the generated
// program does, with a user's policy (test_pick_first: grpc-go's pick_first
// behind a builder of this package) mapped onto pick_first: A61's Happy
// Eyeballs scenario gives a trace that conform's checks judge a pass; a
// scenario that runs grpc-go's own round_robin alone, an xDS scenario and
// an unknown spec say why they have no verdict.
func TestMain_JudgesAUsersPolicyInTheSimulator(t *testing.T) {
	out := t.TempDir()
	ids := []string{"A61/he-dropped-ipv6", "A61/xds-dual-stack-endpoint", "A61/no-such-spec", "A61/rr-error-detail"}
	req, _ := json.Marshal(Request{Name: "go:test", Policies: "pick_first=test_pick_first", Specs: ids, Out: out})
	t.Setenv(RequestEnv, string(req))
	Main(t)
	byID := specsByID()
	results := make([]Result, len(ids))
	for i := range ids {
		b, err := os.ReadFile(filepath.Join(out, strconv.Itoa(i)+".json"))
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
	if tr.Header.Impl != "go:test" || tr.Header.Mode != trace.ModeSim {
		t.Errorf("header %s %s, want go:test in the simulator", tr.Header.Impl, tr.Header.Mode)
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
	if !strings.Contains(results[3].NotApplicable, "runs grpc-go's own round_robin, none of it yours") {
		t.Errorf("a scenario of grpc-go's own round_robin: %+v, want not-applicable saying so", results[3])
	}
}
