package a75_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/suites/a75"
	"github.com/conformlab/conform/suites/spec"
)

// BenchmarkSuiteSim runs the whole A75 suite once per iteration in the
// simulator, checks included, as `conform run --suite a75` does with one
// worker. Goal: under 10 s a run.
//
//	go test -run '^$' -bench SuiteSim -benchtime 3x ./suites/a75/
func BenchmarkSuiteSim(b *testing.B) {
	specs := slices.DeleteFunc(a75.Specs(), func(s spec.Spec) bool { return !s.RunsIn(spec.Sim) })
	for b.Loop() {
		for _, s := range specs {
			o := spec.Run(context.Background(), s, spec.Sim, runner.Reference)
			if msg := verdict.Failed(o.Results); msg != "" {
				b.Fatalf("%s: %s", s.Name(), msg)
			}
		}
	}
	b.ReportMetric(float64(len(specs)), "specs")
}

// BenchmarkXDSFirstRPCLab measures, in the lab, how long an xDS client
// takes from its start to its first RPC served: the channel is created
// with an xds target at 0, the management server already holds the
// listener, route, cluster and endpoints, and RPC r1 (wait_for_ready) is
// sent at 0. The time is r1's result on the trace's timebase, which
// covers the ADS stream, LDS → RDS → CDS → EDS, the policy tree and the
// backend's connection. Goal: at most 1 s.
//
//	go test -run '^$' -bench XDSFirstRPCLab -benchtime 10x ./suites/a75/
func BenchmarkXDSFirstRPCLab(b *testing.B) {
	if err := netlab.Available().Err(); err != nil {
		b.Skip("lab not available: ", err)
	}
	s := firstRPCScenario()
	var lat []time.Duration
	for b.Loop() {
		tr, err := runner.Run(context.Background(), s, runner.Reference, spec.Lab, runner.Options{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, firstResult(b, tr))
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}

// firstRPCScenario: listener → route → EDS cluster (round_robin) with one
// backend; r1 at 0.
func firstRPCScenario() *scenario.Scenario {
	return scenario.New("xds-first-rpc").
		Describe("xDS: one EDS cluster of one backend set at 0; r1 (wait_for_ready) at 0").
		Backend("b1", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(spec.XDSResources("eds1", []xds.Cluster{{Name: "eds1", Type: xds.ClusterEDS}},
			xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{
				{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{{Addr: "b1/ipv4"}}},
			}}}}))).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
}

// firstResult is the time of r1's result, which must be a success.
func firstResult(b *testing.B, tr *trace.Trace) time.Duration {
	for _, e := range tr.Events {
		if e.Kind == trace.KindRPCResult && e.RPC == "r1" {
			if e.Code != "" && e.Code != "OK" {
				b.Fatalf("r1 failed: %s %s", e.Code, e.Err)
			}
			return e.T
		}
	}
	b.Fatal("r1 has no result")
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
