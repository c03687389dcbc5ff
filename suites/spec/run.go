package spec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// notApplicable is implemented by errors saying the implementation cannot
// express the scenario (a driver lacking a capability).
type notApplicable interface{ NotApplicable() string }

// crashed is implemented by errors saying the implementation under test
// crashed during the scenario (a driver's process dying of a native crash
// signal): evidence against the implementation, so its verdicts are fails.
type crashed interface{ Crashed() string }

// Outcome is one run of one spec in one mode. It stays here, not in
// harness/verdict, because it carries the Spec: the golden-trace and
// agreement checks read the spec's options, `record` its golden path.
type Outcome struct {
	Spec    Spec
	Mode    trace.Mode
	Trace   *trace.Trace // nil when the run broke before producing one
	Results []verdict.Result
	Took    time.Duration // the run's wall time, judging included (RunJobs sets it)
}

// Run runs s in mode m against impl (runner.Run) and judges the run.
func Run(ctx context.Context, s Spec, m trace.Mode, impl runner.Impl) Outcome {
	tr, err := runner.Run(ctx, s.Scenario, impl, m, runner.Options{Seed: s.SeedOrDefault(), Origin: trace.OriginSuite})
	o := Judge(s, m, tr, err)
	if tr == nil {
		// A run that broke before its trace: the implementation's name
		// still says which rules are not its own.
		o.Results = verdict.Scope(o.Results, trace.NewHeader(s.Scenario, impl.String(), m, s.SeedOrDefault()))
	}
	return o
}

// Judge checks s's requirements on the trace and error of one run in mode
// m. A run that cannot express the scenario gives not-applicable verdicts;
// one in which the implementation crashed gives one fail of kind crash
// (its requirements inconclusive); one that breaks otherwise gives error
// verdicts, with the reason. A requirement the catalogue scopes away from
// the run's implementation (verdict.Scope) is not-applicable, with the
// document's words, unless the run is an error.
func Judge(s Spec, m trace.Mode, tr *trace.Trace, err error) Outcome {
	o := Outcome{Spec: s, Mode: m, Trace: tr}
	var na notApplicable
	var cr crashed
	switch {
	case errors.As(err, &na):
		o.Results = verdict.Broken(s.Subject(m), s.Requirements(), verdict.NotApplicable, na.NotApplicable())
	case errors.As(err, &cr):
		o.Results = verdict.Crashed(s.Subject(m), s.Requirements(), cr.Crashed()+":\n"+err.Error())
	case err != nil:
		o.Results = verdict.Broken(s.Subject(m), s.Requirements(), verdict.Error, err.Error())
	default:
		o.Results = verdict.Evaluate(s.Subject(m), s.Checks, tr)
	}
	if tr != nil {
		o.Results = verdict.Scope(o.Results, tr.Header)
	}
	return o
}

// CheckGoldenOutcome adds the golden-trace comparison of a reference run to
// its outcome: a trace that differs from its golden trace is one fail, of
// its own (verdict.GoldenTrace), naming the first differing event and the
// requirements the spec checks, since the difference is a change of
// behaviour to be reviewed. The checks' own verdicts stand as they are.
func (o *Outcome) CheckGoldenOutcome(tracesDir string) {
	if o.Trace == nil || hasVerdict(o.Results, verdict.Error, verdict.NotApplicable) {
		return
	}
	err := CheckGolden(tracesDir, o.Spec, o.Mode, o.Trace)
	switch {
	case err == nil:
	case errors.Is(err, ErrGoldenDiffers):
		ev := fmt.Sprintf("%v\nthe requirements this spec checks, whose checks may read that lane: %s",
			err, strings.Join(o.Spec.Requirements(), ", "))
		o.Results = append(o.Results, verdict.Result{Spec: o.Spec.Name(), Doc: string(o.Spec.Doc), Requirement: verdict.GoldenTrace,
			Mode: o.Mode, Verdict: verdict.Fail, Kind: verdict.Deviates, Evidence: ev})
	default: // missing or unreadable: the harness's to mend, not a behaviour
		o.Results = append(o.Results, verdict.Result{Spec: o.Spec.Name(), Doc: string(o.Spec.Doc), Requirement: verdict.GoldenTrace,
			Mode: o.Mode, Verdict: verdict.Error, Evidence: err.Error()})
	}
}

func hasVerdict(rs []verdict.Result, vs ...verdict.Verdict) bool {
	for _, r := range rs {
		for _, v := range vs {
			if r.Verdict == v {
				return true
			}
		}
	}
	return false
}
