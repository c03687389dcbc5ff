// Package runner runs a scenario against an implementation in one mode and
// returns its trace. Run is the one way a scenario is run: by `conform run`,
// `verify`, `record`, `lab demo` and the Ginkgo suites alike.
//
// An implementation is a value (Impl): the reference in this process
// (Reference: in the simulator and in the lab, with its policy's events),
// grpc-go's own policies linked into this process (LinkedGRPCGo), or a
// driver process (Driver: the lab only). A lab run builds one lab, with its
// backends, faults, capture and lab services (the xDS management server, the
// lab DNS), and puts the implementation's client in it: a channel in this
// process or a driver process, behind one interface (labClient).
//
// Both modes carry out the same timeline (steps at times and after events)
// and name addresses the same way: backend i's addresses are the lab's
// (netlab.BackendAddr) on port netlab.DefaultPort, so that a simulated and a
// lab trace of one scenario compare lane by lane.
package runner

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// Options configure a run.
type Options struct {
	// Seed seeds the run's randomness (the policy's, and backoff jitter in
	// simulation). Recorded in the trace header.
	Seed uint64
	// Origin is where the run's trace says it came from (trace.Origin):
	// a suite's spec, a user's scenario, a replay. Empty means
	// trace.OriginScenario.
	Origin trace.Origin
}

// An Impl is an implementation under test: Reference, LinkedGRPCGo or a
// Driver.
type Impl interface {
	// String names the implementation as traces and reports do.
	String() string
	// runSim runs s in the simulator, or says why the implementation
	// cannot run there (*NotApplicable).
	runSim(ctx context.Context, s *scenario.Scenario, opts Options) (*trace.Trace, error)
	// labClient returns the client that puts the implementation in a lab
	// run of s, having done what can be done before the lab exists
	// (checking the scenario's switches, installing a driver).
	labClient(ctx context.Context, s *scenario.Scenario) (labClient, error)
}

// Run runs s against impl in mode and returns the trace. A scenario the
// implementation cannot express fails with *NotApplicable; a trace is
// returned with the error when the run got that far.
func Run(ctx context.Context, s *scenario.Scenario, impl Impl, mode trace.Mode, opts Options) (*trace.Trace, error) {
	var tr *trace.Trace
	var err error
	switch mode {
	case trace.ModeSim:
		tr, err = impl.runSim(ctx, s, opts)
	case trace.ModeLab:
		tr, err = runLab(ctx, s, impl, opts)
	default:
		return nil, fmt.Errorf("%s: unknown mode %q (want %s or %s)", s.Name, mode, trace.ModeSim, trace.ModeLab)
	}
	if tr != nil {
		provenance(&tr.Header, opts.Origin)
	}
	return tr, err
}

// provenance records in h where the trace came from and what a run of its
// kind shows (trace.InferShows: the header's mode, implementation and the
// driver's capabilities say it).
func provenance(h *trace.Header, o trace.Origin) {
	if o == "" {
		o = trace.OriginScenario
	}
	h.Origin, h.Shows = o, trace.InferShows(*h)
}

// NotApplicable is the error of a run whose scenario needs something the
// implementation cannot express, with the reason.
type NotApplicable struct {
	Reason string
}

func (e *NotApplicable) Error() string { return "not applicable: " + e.Reason }

// NotApplicable is the reason, for the verdicts.
func (e *NotApplicable) NotApplicable() string { return e.Reason }

// labFamily is a scenario's address family in the lab's words.
var labFamily = map[scenario.Family]netlab.Family{scenario.IPv4: netlab.IPv4, scenario.IPv6: netlab.IPv6}

// AddrOf is the address plan every runner uses: the lab's.
func AddrOf(_ string, index int, fam scenario.Family) string {
	return netip.AddrPortFrom(netlab.BackendAddr(index, labFamily[fam]), netlab.DefaultPort).String()
}
