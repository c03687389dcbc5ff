package runner

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference"
)

// LinkedGRPCGo is grpc-go's own policies, of the version conform is built
// with, in this process: in the lab, a real channel whose policy is the
// scenario's (in standard names; grpc-go's default pick_first without one),
// seen from outside only, as a third party is. `conform lab demo` runs it.
var LinkedGRPCGo Impl = linkedImpl{}

type linkedImpl struct{}

func (linkedImpl) String() string { return "grpc-go@v" + grpc.Version + " (linked)" }

func (l linkedImpl) runSim(_ context.Context, s *scenario.Scenario, _ Options) (*trace.Trace, error) {
	return nil, fmt.Errorf("%s: %w", s.Name, &NotApplicable{Reason: l.String() + " runs in the lab only, for now"})
}

func (l linkedImpl) labClient(_ context.Context, s *scenario.Scenario) (labClient, error) {
	if len(s.Client.Env) > 0 {
		return nil, &NotApplicable{Reason: l.String() + " reads its switches from the process's environment, which runs share"}
	}
	policy, config, err := linkedPolicy(s.Client)
	if err != nil {
		return nil, err
	}
	return &inProcess{name: l.String(), policy: policy, config: config}, nil
}

// linkedPolicy is the client's policy and its config, in grpc-go's
// registered (standard) names.
func linkedPolicy(c scenario.Client) (policy, config string, err error) {
	return reference.FirstLBConfig(c.EffectiveServiceConfig())
}
