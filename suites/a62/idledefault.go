package a62

import (
	"fmt"
	"slices"
	"time"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
	"github.com/onsi/gomega"
)

// recommendedIdleTimeout is the idle timeout A62 recommends a channel has
// by default (Use sticky-TF by default: "we recommend a default of 30
// minutes").
const recommendedIdleTimeout = 30 * time.Minute

// idleDefaultRun is how long idle-timeout-default lasts: the recommended
// timeout after r1, and a minute's margin for the lab.
const idleDefaultRun = recommendedIdleTimeout + time.Minute

// idleTimeoutDefault: a channel given no idle timeout (no
// client.idle_timeout: every runner and driver leaves the client's default
// alone) connects to b1 through the lab's DNS and answers r1; then no RPC
// for 31 minutes. A62 (Use sticky-TF by default) has channels go IDLE after
// IDLE_TIMEOUT without RPC activity, on by default, 30 minutes
// recommended. Its lab run lasts those 31 minutes: LabelLong.
func idleTimeoutDefault() spec.Spec {
	return spec.Spec{
		Doc: requirement.A62, Section: sectionStickyDflt,
		Labels: []string{spec.LabelSlow, spec.LabelLong},
		Scenario: scenario.New("idle-timeout-default").
			Describe("no idle timeout set; target dns (b1); r1 at 100 ms; then no RPC for 31 min").
			Backend("b1", scenario.IPv4Only).
			Target(scenario.TargetDNS).
			LB("pick_first", `{}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(100*time.Millisecond, scenario.RPC("r1", scenario.Deadline(2*time.Second))).
			End(idleDefaultRun).
			MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A62-IDLE-TIMEOUT-DEFAULT", Assert: expectIdleByDefault},
		},
		Agreement: idleAgreement,
	}
}

// expectIdleByDefault: with no idle timeout configured, the channel goes
// IDLE some time after its last RPC ends, as it shows from outside: it
// reports IDLE, or it closes its connection (the backend's conn-close),
// before the run's end and the channel's shutdown. The value is A62's
// recommendation, not a rule: any timeout passes, and the one observed is
// the pass's evidence. A channel that has not gone IDLE by the run's end,
// at least the recommended 30 minutes after its last RPC, fails as absent:
// no idle timeout by default, or one longer than recommended (the run
// cannot tell the two apart).
func expectIdleByDefault(_ gomega.Gomega, tr *trace.Trace) {
	verdict.Require(tr.Header.Scenario.Client.IdleTimeout == 0,
		"the scenario sets client.idle_timeout (%v): the check is of a channel given none", tr.Header.Scenario.Client.IdleTimeout)
	results := spec.Of(tr, trace.KindRPCResult)
	verdict.Require(slices.ContainsFunc(results, func(e trace.Event) bool { return e.Code == "" || e.Code == "OK" }),
		"no RPC was answered: the channel never had a connection to give up on going IDLE: %s", spec.Render(results))
	last := results[len(results)-1].T
	end := runEnd(tr)
	evidence := trace.Select(tr.Events, func(e trace.Event) bool { return e.T > last && e.T < end }, func(e trace.Event) bool {
		return e.Kind == trace.KindConnClose || (e.Kind == trace.KindChannelState && e.State == idle)
	})
	if len(evidence) == 0 {
		verdict.Require(end-last >= recommendedIdleTimeout+spec.Within(tr, labSlack),
			"the run ended %v after the last RPC's end (%s), before the recommended %v were up: too short to judge",
			end-last, trace.FormatT(last), recommendedIdleTimeout)
		verdict.NoSign("the channel did not go IDLE (no IDLE reported, no connection closed by the client) in the %v from its last RPC's end (%s) to the run's end: no idle timeout by default, or one longer than the %v A62 recommends",
			(end - last).Round(time.Millisecond), trace.FormatT(last), recommendedIdleTimeout)
	}
	first := evidence[0]
	took := first.T - last
	how := "reported IDLE"
	if first.Kind == trace.KindConnClose {
		how = "closed its connection to " + first.Backend
	}
	verdict.PassWith("the channel %s %v after its last RPC's end (%s): its default idle timeout (%s A62's recommended %v)",
		how, took.Round(time.Millisecond), trace.FormatT(last), comparedTo(took, tr), recommendedIdleTimeout)
}

// comparedTo says how took compares with the recommended idle timeout,
// within the lab's slack.
func comparedTo(took time.Duration, tr *trace.Trace) string {
	d := took - recommendedIdleTimeout
	slack := spec.Within(tr, labSlack)
	switch {
	case d >= -slack && d <= slack:
		return "as"
	case d < 0:
		return fmt.Sprintf("%v shorter than", (-d).Round(time.Millisecond))
	default:
		return fmt.Sprintf("%v longer than", d.Round(time.Millisecond))
	}
}

// runEnd is when the run stopped watching the channel: the scenario's end,
// or the channel's SHUTDOWN (the run closing it) if that came first. What
// the channel does from then on is the run's doing, not its idle timeout's.
func runEnd(tr *trace.Trace) time.Duration {
	end := tr.Header.Scenario.End
	for _, e := range spec.Of(tr, trace.KindChannelState) {
		if e.State == "SHUTDOWN" && e.T < end {
			end = e.T
		}
	}
	return end
}
