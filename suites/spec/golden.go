package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// GoldenPath is where s's golden trace for mode m lives under the traces
// directory: traces/<document>/<scenario>.<mode>.jsonl.
func GoldenPath(tracesDir string, s Spec, m trace.Mode) string {
	return filepath.Join(tracesDir, strings.ToLower(string(s.Doc)), s.Name()+"."+string(m)+".jsonl")
}

// ReadGolden reads s's golden trace for mode m from the traces directory
// of the enclosing checkout (TracesDir): what a test that judges a check on
// a recorded trace starts from.
func ReadGolden(s Spec, m trace.Mode) (*trace.Trace, error) {
	dir, err := TracesDir()
	if err != nil {
		return nil, err
	}
	return trace.ReadFile(GoldenPath(dir, s, m))
}

// ErrNoGolden means a spec has no golden trace yet (`conform record` writes it).
var ErrNoGolden = errors.New("no golden trace")

// ErrGoldenDiffers means a trace differs from its golden trace: a change of
// behaviour, where the other errors of CheckGolden are the harness's (a
// golden trace missing or unreadable).
var ErrGoldenDiffers = errors.New("the trace differs from the golden trace")

// CheckGolden compares tr with s's golden trace for mode m. Simulated traces
// must be equal event for event (times exact); lab traces are compared as
// s.LabGolden says, and not at all when it is nil.
func CheckGolden(tracesDir string, s Spec, m trace.Mode, tr *trace.Trace) error {
	opts := compare.Options{}
	if m == Lab {
		if s.LabGolden == nil {
			return nil
		}
		opts = *s.LabGolden
	}
	path := GoldenPath(tracesDir, s, m)
	golden, err := trace.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w (run: conform record --suite %s --mode %s)", path, ErrNoGolden, strings.ToLower(string(s.Doc)), m)
	}
	if err != nil {
		return err
	}
	if res := compare.Traces(golden, tr, opts); !res.Equal() {
		return fmt.Errorf("%w %s:\n%s", ErrGoldenDiffers, path, res.String())
	}
	return nil
}

// WriteGolden writes tr as s's golden trace for mode m (atomically).
func WriteGolden(tracesDir string, s Spec, m trace.Mode, tr *trace.Trace) error {
	path := GoldenPath(tracesDir, s, m)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return trace.WriteFile(path, tr)
}

// CheckAgreement compares the simulated and the lab trace of one run of s,
// as s.Agreement says: how we know the simulator tells the truth. A
// divergence in time that the lab's machine stalled in the middle of (its
// stall watch saw a stall of StallLimit or more in the second before the
// later of the two events) is ErrUnsteadyAgreement: a loaded machine cannot
// tell whether the simulator is right, and says so rather than fail.
func CheckAgreement(s Spec, simTrace, labTrace *trace.Trace) error {
	if s.Agreement == nil {
		return nil
	}
	res := compare.Traces(simTrace, labTrace, *s.Agreement)
	if res.Equal() {
		return nil
	}
	err := fmt.Errorf("the simulator and the lab disagree (simulated left, lab right):\n%s", res.String())
	if d := res.Divergence; d.Diff == compare.Shifted && d.Expected != nil && d.Seen != nil {
		to := max(d.Expected.T, d.Seen.T)
		if st, ok := stallNear(labTrace, to-time.Second, to); ok {
			return fmt.Errorf("%w: it stalled %s at %s, before the divergence:\n%w", ErrUnsteadyAgreement,
				st.Duration.Round(100*time.Microsecond), trace.FormatT(st.T), err)
		}
	}
	return err
}

// ErrUnsteadyAgreement means the simulator and the lab diverged in time
// where the lab's machine stalled: nothing is known either way.
var ErrUnsteadyAgreement = errors.New("the lab's machine stalled")

// TracesDir finds the project's traces directory from the working
// directory: the nearest ancestor holding go.mod and traces/.
func TracesDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "traces")); err == nil && fi.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.Join(dir, "traces"), nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no traces directory above the working directory (run from the conform checkout, or pass --traces)")
		}
		dir = parent
	}
}

// XDSAgreement is how the simulated and the lab trace of an xDS scenario
// must agree: the client's xDS requests, the LB configs its resolver
// pushed, the subchannels made, and who answered each RPC, before the
// scenario's end, each within slack. Left out: subchannel shutdowns (the
// lab closes the channel when the run ends, the simulator records no
// close) and resolver updates (the lab records every push of the resolver,
// re-resolution answers included; the simulator only those that changed
// the state).
func XDSAgreement(s *scenario.Scenario, slack time.Duration) *compare.Options {
	end := s.End
	return &compare.Options{
		Select: []trace.Pred{
			trace.OfKind(trace.KindXDSRequest, trace.KindConfigUpdate, trace.KindSubchannelNew, trace.KindRPCResult),
			func(e trace.Event) bool { return e.T < end },
		},
		Ignore:    []string{"peer"},
		Tolerance: slack,
	}
}

// XDSAgreementUntil is XDSAgreement over the events before cut: for a
// scenario whose later steps wait on events whose time the simulator and
// the lab draw each their own way (a reconnection after a jittered
// backoff), so that what follows cannot line up in time.
func XDSAgreementUntil(s *scenario.Scenario, slack, cut time.Duration) *compare.Options {
	o := XDSAgreement(s, slack)
	o.Select = append(o.Select, func(e trace.Event) bool { return e.T < cut })
	return o
}

// XDSConnectionAgreement is XDSAgreement without the RPCs' results: for a
// scenario whose RPCs meet a policy that is busy with something the lab
// schedules its own way (a reconnection after a jittered backoff beside
// them), so that an RPC's time there says nothing of the simulator; the
// specs' checks judge who answered each RPC in either mode.
func XDSConnectionAgreement(s *scenario.Scenario, slack time.Duration) *compare.Options {
	o := XDSAgreement(s, slack)
	o.Select = append(o.Select, func(e trace.Event) bool { return e.Kind != trace.KindRPCResult })
	return o
}

// XDSSpreadAgreement is XDSAgreement without which backend answered each
// RPC, for scenarios in which round_robin spreads RPCs over several
// endpoints. round_robin starts its rotation at a random endpoint each time
// it builds a picker (reference/roundrobin, from the run's seeded
// randomness); in the lab, subchannels turning READY in another order or
// one by one make more pickers than in the simulator, so the draws differ
// and so does the backend of each RPC. The specs' checks assert the spread.
func XDSSpreadAgreement(s *scenario.Scenario, slack time.Duration) *compare.Options {
	o := XDSAgreement(s, slack)
	o.Ignore = append(o.Ignore, "backend")
	return o
}
