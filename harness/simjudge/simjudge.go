// Package simjudge runs the suites' scenarios in the simulator against a
// user's own Go balancer (`conform verify --impl go:…`). A balancer is
// judged in the simulator only when it is compiled into the process that
// simulates, so conform generates, per user module, a test program that
// links the module and this package (harness/driver's BuildSimJudge) and
// runs it; the program runs each scenario it is asked for and writes the
// traces, which conform judges as it judges every run.
//
// Each scenario runs inside a testing/synctest bubble: a balancer that sets
// its timers with the time package (grpc-go's own do) runs on the
// simulator's wall-mode channel, whose wall clock inside the bubble is the
// bubble's fake clock, so the run takes no wall time for its timers and
// gives the same trace every time.
package simjudge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/conformlab/conform/drivers/go/protocol"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/a56"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/a62"
	"github.com/conformlab/conform/suites/a75"
	"github.com/conformlab/conform/suites/l9"
	"github.com/conformlab/conform/suites/spec"
)

// RequestEnv is the environment variable that carries the Request, as
// JSON, to the generated program.
const RequestEnv = "CONFORM_SIMJUDGE"

// Request is what the generated program is asked to run.
type Request struct {
	// Name is the implementation's name in the traces.
	Name string `json:"name"`
	// Policies is the policy mapping (protocol.PolicyMap's String form).
	Policies string `json:"policies"`
	// Can are the capabilities the user declares for the mapped policies
	// (protocol.ParseCan's, joined by commas): the traces' header says
	// them, as a driver's hello would, for the rules scoped by them.
	Can string `json:"can"`
	// Specs are the specs to run, by ID (ID).
	Specs []string `json:"specs"`
	// Env are the gRPC switches the program was started with, in its
	// environment (grpc-go reads them once, when the process starts): the
	// specs are those whose scenarios set exactly these, none when empty.
	Env map[string]string `json:"env,omitempty"`
	// Out is the directory the results go to: for the i-th spec,
	// <i>.json (a Result) and, when it ran, <i>.jsonl (its trace).
	Out string `json:"out"`
}

// Result is one spec's run: its trace file, or why there is none.
type Result struct {
	Spec  string `json:"spec"`
	Trace string `json:"trace,omitempty"`
	// NotApplicable, or Err, says why the run has no trace or did not
	// end as the scenario says.
	NotApplicable string `json:"not_applicable,omitempty"`
	Err           string `json:"err,omitempty"`
}

// ID names a spec across processes: "A61/he-dropped-ipv6".
func ID(s spec.Spec) string { return fmt.Sprintf("%s/%s", s.Doc, s.Name()) }

// Main runs the Request of the environment; the generated program's only
// test calls it.
func Main(t *testing.T) {
	var req Request
	if err := json.Unmarshal([]byte(os.Getenv(RequestEnv)), &req); err != nil {
		t.Fatalf("%s: %v", RequestEnv, err)
	}
	m, err := protocol.ParsePolicyMap(req.Policies)
	if err != nil {
		t.Fatal(err)
	}
	can, err := protocol.ParseCan(m, req.Can)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range req.Env {
		if got, ok := os.LookupEnv(k); !ok || got != v {
			t.Fatalf("the request's switch %s=%s is not in this process's environment (%q): start the program with it", k, v, got)
		}
	}
	impl := runner.Linked(req.Name, m, req.Env)
	byID := specsByID()
	for i, id := range req.Specs {
		s, ok := byID[id]
		res := Result{Spec: id, Err: "no such spec in this build of conform"}
		if ok {
			res = runOne(t, s, impl, can, filepath.Join(req.Out, fmt.Sprintf("%d.jsonl", i)))
		}
		b, _ := json.Marshal(res)
		if err := os.WriteFile(filepath.Join(req.Out, fmt.Sprintf("%d.json", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runOne runs s in the simulator inside a bubble and writes its trace,
// whose header declares can.
func runOne(t *testing.T, s spec.Spec, impl runner.Impl, can []string, path string) Result {
	res := Result{Spec: ID(s)}
	var tr *trace.Trace
	var err error
	synctest.Test(t, func(*testing.T) {
		tr, err = runner.Run(context.Background(), s.Scenario, impl, spec.Sim, runner.Options{Seed: s.SeedOrDefault(), Origin: trace.OriginSuite})
	})
	var na *runner.NotApplicable
	if errors.As(err, &na) {
		res.NotApplicable = na.Reason
		return res
	}
	if err != nil {
		res.Err = err.Error()
	}
	if tr != nil {
		if tr.Header.Env == nil {
			tr.Header.Env = map[string]string{}
		}
		tr.Header.Env[trace.EnvDriverCan] = strings.Join(can, ",")
		if werr := trace.WriteFile(path, tr); werr != nil {
			res.Err = werr.Error()
			return res
		}
		res.Trace = path
	}
	return res
}

func specsByID() map[string]spec.Spec {
	out := map[string]spec.Spec{}
	for _, specs := range [][]spec.Spec{a61.Specs(), a62.Specs(), a56.Specs(), a75.Specs(), l9.Specs()} {
		for _, s := range specs {
			out[ID(s)] = s
		}
	}
	return out
}
