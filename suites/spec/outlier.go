package spec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// Outlier detection from outside (A50, A61, A75): what a client's outlier
// detection counted is read from where each RPC was answered (the
// backend's rpc-served, with the code of a fail_rpcs fault; in the
// simulator, the RPC's pick) and its result; when it counted is read from
// the sweep schedule, which starts when the policy gets its first config
// and repeats every interval (A50, Outlier Detection Behavior).

// ODSlack is how far a client's sweep may be from where its first EDS ACK
// puts it: the interval timer starts when outlier_detection gets its first
// config, which an xDS client hands its policy tree just before or just
// after it ACKs the resources (by a few milliseconds on this machine; the
// slack leaves room for a loaded one).
const ODSlack = 100 * time.Millisecond

// ODCounting is the event an outlier detection scenario times its steps
// from (Builder.AfterDelay, SendRPCsAfter): the client's first EDS ACK,
// which is where ODStart puts the start of the sweep schedule. Timed from
// it, the groups of RPCs keep their places in the intervals however long a
// client takes to start (a driver process, a loaded machine).
var ODCounting = scenario.On("xds-request").WithXDS(trace.XDSACK, "EDS")

// ODStart is when the client's outlier detection began counting, as its
// first EDS ACK shows it (within ODSlack); ok is false when it never ACKed
// EDS.
func ODStart(tr *trace.Trace) (at time.Duration, ok bool) {
	acks := XDSRequests(tr, TypeEDS, trace.XDSACK)
	if len(acks) == 0 {
		return 0, false
	}
	return acks[0].T, true
}

// RequireInODInterval states a precondition of a check reading what
// outlier detection made of RPCs ids: each of them was sent and answered
// inside the k-th interval of the sweep schedule (k = 0: before the first
// sweep; k = 1: between the first and the second), ODSlack away from the
// sweeps that bound it. An RPC of interval 0 cannot be picked before the
// counting began, so only its end is bounded. Otherwise the check is
// inconclusive: the RPCs were counted, or judged, in an interval the
// scenario did not mean.
func RequireInODInterval(tr *trace.Trace, interval time.Duration, k int, ids ...string) {
	start, ok := ODStart(tr)
	verdict.Require(ok, "the client never ACKed EDS: no configuration, so no outlier detection to judge")
	from, to := start+time.Duration(k)*interval+ODSlack, start+time.Duration(k+1)*interval-ODSlack
	for _, id := range ids {
		first, last, ok := RPCSpan(tr, id)
		verdict.Require(ok, "RPC %s was not sent, or has no result", id)
		verdict.Require((k == 0 || first >= from) && last <= to,
			"RPC %s (%s to %s) is not inside outlier detection's interval %d (%s to %s: sweeps every %s from the first EDS ACK at %s, %s either side)",
			id, trace.FormatT(first), trace.FormatT(last), k, trace.FormatT(from), trace.FormatT(to), interval, trace.FormatT(start), ODSlack)
	}
}

// RPCSpan is when RPC id was sent and when its result came; ok is false
// when it was not sent or has no result.
func RPCSpan(tr *trace.Trace, id string) (start, end time.Duration, ok bool) {
	var sent, done bool
	for _, e := range tr.Events {
		switch {
		case e.RPC != id:
		case e.Kind == trace.KindRPCStart && !sent:
			start, sent = e.T, true
		case e.Kind == trace.KindRPCResult && !done:
			end, done = e.T, true
		}
	}
	return start, end, sent && done
}

// Answer is where one RPC was answered and how.
type Answer struct {
	RPC  string
	Addr string // the address that answered it; "" when nothing shows one
	Code string // its result's status code ("OK", "UNAVAILABLE", …); "" without a result
}

// OK reports whether the RPC was answered with OK.
func (a Answer) OK() bool { return a.Code == "OK" }

func (a Answer) String() string {
	if a.Addr == "" {
		return fmt.Sprintf("%s %s (no address)", a.RPC, a.Code)
	}
	return fmt.Sprintf("%s %s on %s", a.RPC, a.Code, a.Addr)
}

// Answers are where RPCs ids were answered (ServedOn's evidence: the
// backend's rpc-served event in the lab, the pick in the simulator) and
// with which code, in the order of ids. Unlike ServedOn it never fails: an
// RPC with no result or no evidence has an empty Code or Addr.
func Answers(tr *trace.Trace, ids ...string) []Answer {
	out := make([]Answer, len(ids))
	for i, id := range ids {
		out[i] = Answer{RPC: id}
		start, end, ok := RPCSpan(tr, id)
		if !ok {
			continue
		}
		for _, e := range tr.Events {
			if e.Kind == trace.KindRPCResult && e.RPC == id {
				out[i].Code = e.Code
				if out[i].Code == "" {
					out[i].Code = "OK"
				}
				break
			}
		}
		out[i].Addr = servedOn(tr, id, start, end)
	}
	return out
}

// servedOn is ServedOn's evidence of the address RPC id (sent at start,
// answered at end) was served on, or "": the backend's rpc-served naming
// the RPC (the lab names every RPC it sends); in a trace whose backends
// name none, the last rpc-served between its start and its result; else
// its last pick's address (the simulator has no backends).
func servedOn(tr *trace.Trace, id string, start, end time.Duration) string {
	served := trace.Select(tr.Events, trace.OfKind(trace.KindRPCServed))
	if named := trace.Select(served, func(e trace.Event) bool { return e.RPC != "" }); len(named) > 0 {
		named = trace.Select(named, func(e trace.Event) bool { return e.RPC == id })
		if len(named) == 0 {
			return ""
		}
		return named[len(named)-1].Addr
	}
	method := ""
	for _, e := range tr.Events {
		if e.Kind == trace.KindRPCStart && e.RPC == id {
			method = e.Method
			break
		}
	}
	served = trace.Select(served, func(e trace.Event) bool {
		return e.T >= start && e.T <= end && (method == "" || e.Method == method)
	})
	if len(served) > 0 {
		return served[len(served)-1].Addr
	}
	picks := trace.Select(PicksOf(tr, id), func(e trace.Event) bool { return e.Addr != "" })
	if len(picks) == 0 {
		return ""
	}
	return picks[len(picks)-1].Addr
}

// Tally counts answers per address: how many were answered there and how
// many of those failed.
type Tally struct{ Total, Failed int }

// TallyAnswers counts as per address; answers with no address are left out.
func TallyAnswers(as []Answer) map[string]Tally {
	out := map[string]Tally{}
	for _, a := range as {
		if a.Addr == "" {
			continue
		}
		t := out[a.Addr]
		t.Total++
		if !a.OK() {
			t.Failed++
		}
		out[a.Addr] = t
	}
	return out
}

// RenderAnswers lists answers for a message, one per line.
func RenderAnswers(as []Answer) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString("\n  " + a.String())
	}
	if b.Len() == 0 {
		return " (none)"
	}
	return b.String()
}

// AnsweredBy keeps the answers given on one of addrs.
func AnsweredBy(as []Answer, addrs ...string) []Answer {
	return slices.DeleteFunc(slices.Clone(as), func(a Answer) bool { return !slices.Contains(addrs, a.Addr) })
}

// ODAgreement is how the simulated and the lab trace of an outlier
// detection spec agree: the xDS exchange, the LB configs, and the results
// of RPCs ids (code and backend), each within ODSlack. The spec's other
// RPCs are left out: which of two endpoints round_robin gives each depends
// on where its rotation starts (XDSSpreadAgreement), and with it which of
// them fail.
func ODAgreement(s *scenario.Scenario, ids ...string) *compare.Options {
	end := s.End
	return &compare.Options{
		Select: []trace.Pred{
			func(e trace.Event) bool {
				switch e.Kind {
				case trace.KindXDSRequest, trace.KindConfigUpdate:
					return true
				case trace.KindRPCResult:
					return slices.Contains(ids, e.RPC)
				}
				return false
			},
			func(e trace.Event) bool { return e.T < end },
		},
		Ignore:    []string{"peer"},
		Tolerance: ODSlack,
	}
}
