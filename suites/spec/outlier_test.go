package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// odTrace: EDS ACKed at 100 ms; in the lab's form, r1 failed on a1 (its
// backend's rpc-served with the code), r2 answered on a2, r3 never
// answered; in the simulator's form (no backends), r4 failed after a pick
// on a1; r5 sent at 1.25 s, answered at 1.3 s.
func odTrace() *trace.Trace {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ev := func(t int, src trace.Source, k trace.Kind, id string) trace.Event {
		return trace.Event{T: ms(t), Source: src, Kind: k, RPC: id}
	}
	served := func(t int, addr, code string) trace.Event {
		return trace.Event{T: ms(t), Source: trace.SourceBackend, Kind: trace.KindRPCServed, Addr: addr, Code: code}
	}
	result := func(t int, id, code string) trace.Event {
		e := ev(t, trace.SourceDriver, trace.KindRPCResult, id)
		e.Code = code
		return e
	}
	pick := ev(401, trace.SourcePolicy, trace.KindPick, "r4")
	pick.Addr = "a1"
	return &trace.Trace{Events: []trace.Event{
		{T: ms(100), Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest, TypeURL: TypeEDS, XDS: trace.XDSACK, Version: "1"},
		ev(200, trace.SourceHarness, trace.KindRPCStart, "r1"), served(201, "a1", "UNAVAILABLE"), result(202, "r1", "UNAVAILABLE"),
		ev(300, trace.SourceHarness, trace.KindRPCStart, "r2"), served(301, "a2", ""), result(302, "r2", "OK"),
		ev(350, trace.SourceHarness, trace.KindRPCStart, "r3"),
		ev(400, trace.SourceHarness, trace.KindRPCStart, "r4"), pick, result(402, "r4", "UNAVAILABLE"),
		ev(1250, trace.SourceHarness, trace.KindRPCStart, "r5"), served(1251, "a2", ""), result(1300, "r5", "OK"),
	}}
}

// TestAnswers_WhereAndHowFromBackendOrPick verifies Answers reads the
// address from the backend's rpc-served (lab) or the pick (simulator),
// never fails on an RPC without a result, and TallyAnswers counts per
// address.
func TestAnswers_WhereAndHowFromBackendOrPick(t *testing.T) {
	as := Answers(odTrace(), "r1", "r2", "r3", "r4")
	want := []Answer{{"r1", "a1", "UNAVAILABLE"}, {"r2", "a2", "OK"}, {RPC: "r3"}, {"r4", "a1", "UNAVAILABLE"}}
	if diff := cmp.Diff(want, as); diff != "" {
		t.Fatalf("Answers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]Tally{"a1": {2, 2}, "a2": {1, 0}}, TallyAnswers(as)); diff != "" {
		t.Errorf("TallyAnswers (-want +got):\n%s", diff)
	}
	if got := AnsweredBy(as, "a2"); len(got) != 1 || got[0].RPC != "r2" {
		t.Errorf("AnsweredBy(a2) = %v, want r2", got)
	}
}

// TestRequireInODInterval_BoundsFromTheEDSACK verifies the sweep schedule
// a check may rely on: intervals of 1 s from the EDS ACK, ODSlack inside
// each bound; an RPC outside its interval, or without a result, makes the
// check inconclusive.
func TestRequireInODInterval_BoundsFromTheEDSACK(t *testing.T) {
	tr := odTrace()
	for _, c := range []struct {
		name         string
		k            int
		ids          []string
		inconclusive string // "" when the precondition holds
	}{
		{"interval 0", 0, []string{"r1", "r2", "r4"}, ""},
		{"no result", 0, []string{"r3"}, "RPC r3 was not sent, or has no result"},
		{"interval 1", 1, []string{"r5"}, ""},
		{"too late for interval 0", 0, []string{"r5"}, "RPC r5 (+1.250s to +1.300s) is not inside outlier detection's interval 0"},
		{"too early for interval 1", 1, []string{"r2"}, "is not inside outlier detection's interval 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := verdict.Evaluate(verdict.Subject{}, []Check{{Requirement: "A61-OD-PER-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				RequireInODInterval(tr, time.Second, c.k, c.ids...)
			}}}, tr)
			switch r := rs[0]; {
			case c.inconclusive == "" && r.Verdict != verdict.Pass:
				t.Errorf("%v: %s, want pass", r.Verdict, r.Evidence)
			case c.inconclusive != "" && (r.Verdict != verdict.Inconclusive || !strings.Contains(r.Evidence, c.inconclusive)):
				t.Errorf("%v: %s, want inconclusive with %q", r.Verdict, r.Evidence, c.inconclusive)
			}
		})
	}
}

// TestAnswers_NamedServedEventsWin verifies that where the backends name
// the RPCs they answer, Answers goes by the name, not by the time window:
// r2, sent while r1 was in flight, is answered on a2 before r1 is on a1.
func TestAnswers_NamedServedEventsWin(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tr := &trace.Trace{Events: []trace.Event{
		{T: ms(1), Kind: trace.KindRPCStart, RPC: "r1"},
		{T: ms(2), Kind: trace.KindRPCStart, RPC: "r2"},
		{T: ms(3), Kind: trace.KindRPCServed, Addr: "a2", RPC: "r2"},
		{T: ms(4), Kind: trace.KindRPCServed, Addr: "a1", RPC: "r1", Code: "UNAVAILABLE"},
		{T: ms(5), Kind: trace.KindRPCResult, RPC: "r2", Code: "OK"},
		{T: ms(6), Kind: trace.KindRPCResult, RPC: "r1", Code: "UNAVAILABLE"},
	}}
	want := []Answer{{"r1", "a1", "UNAVAILABLE"}, {"r2", "a2", "OK"}}
	if diff := cmp.Diff(want, Answers(tr, "r1", "r2")); diff != "" {
		t.Errorf("Answers (-want +got):\n%s", diff)
	}
}
