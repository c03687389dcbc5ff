package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// rpcTrace has r1 answered by b1, r2 failed, r3 with two results and r4
// never answered.
func rpcTrace() *trace.Trace {
	ev := func(ms int, k trace.Kind, id string) trace.Event {
		return trace.Event{T: time.Duration(ms) * time.Millisecond, Source: trace.SourceDriver, Kind: k, RPC: id}
	}
	ok := ev(5, trace.KindRPCResult, "r1")
	ok.Code, ok.Backend = "OK", "b1"
	failed := ev(6, trace.KindRPCResult, "r2")
	failed.Code, failed.Err = "UNAVAILABLE", "connection refused"
	return &trace.Trace{Events: []trace.Event{
		ev(1, trace.KindRPCStart, "r1"), ev(2, trace.KindRPCStart, "r2"), ev(3, trace.KindRPCStart, "r3"), ev(4, trace.KindRPCStart, "r4"),
		ok, failed, ev(7, trace.KindRPCResult, "r3"), ev(8, trace.KindRPCResult, "r3"),
	}}
}

// failureOf runs f as a check on tr and returns its failure message, "" if
// it passed.
func failureOf(tr *trace.Trace, f func(g gomega.Gomega, tr *trace.Trace)) string {
	rs := verdict.Evaluate(verdict.Subject{}, []Check{{Requirement: "A61-HE-DELAY-DEFAULT", Assert: f}}, tr)
	return rs[0].Evidence
}

// TestRPCs_ResultsAndBackends verifies what each RPC helper accepts and
// refuses: one result each, a success for ServedBy, a failure for
// ExpectFailed, a start for RPCStart.
func TestRPCs_ResultsAndBackends(t *testing.T) {
	tr := rpcTrace()
	for _, c := range []struct {
		name string
		f    func(g gomega.Gomega, tr *trace.Trace)
		fail string // "" when the check should pass
	}{
		{"ServedBy r1", func(g gomega.Gomega, tr *trace.Trace) { g.Expect(ServedBy(g, tr, "r1")).To(gomega.Equal("b1")) }, ""},
		{"ServedBy r2", func(g gomega.Gomega, tr *trace.Trace) { ServedBy(g, tr, "r2") }, "RPC r2 should succeed"},
		{"ServedBy r3", func(g gomega.Gomega, tr *trace.Trace) { ServedBy(g, tr, "r3") }, "RPC r3 should have exactly one result"},
		{"ServedBy r4", func(g gomega.Gomega, tr *trace.Trace) { ServedBy(g, tr, "r4") }, "RPC r4 should have exactly one result"},
		{"ServedByEach", func(g gomega.Gomega, tr *trace.Trace) { ServedByEach(g, tr, "r1", "r2") }, "RPC r2 should succeed"},
		{"ExpectFailed r2", func(g gomega.Gomega, tr *trace.Trace) { ExpectFailed(g, tr, "r2") }, ""},
		{"ExpectFailed r1", func(g gomega.Gomega, tr *trace.Trace) { ExpectFailed(g, tr, "r1") }, "RPC r1 should fail"},
		{"RPCResult r2", func(g gomega.Gomega, tr *trace.Trace) {
			g.Expect(RPCResult(g, tr, "r2").Code).To(gomega.Equal("UNAVAILABLE"))
		}, ""},
		{"RPCStart r2", func(g gomega.Gomega, tr *trace.Trace) {
			g.Expect(RPCStart(g, tr, "r2")).To(gomega.Equal(2 * time.Millisecond))
		}, ""},
		{"RPCStart r9", func(g gomega.Gomega, tr *trace.Trace) { RPCStart(g, tr, "r9") }, "RPC r9 should have been sent"},
	} {
		got := failureOf(tr, c.f)
		switch {
		case c.fail == "" && got != "":
			t.Errorf("%s failed: %s", c.name, got)
		case c.fail != "" && !strings.Contains(got, c.fail):
			t.Errorf("%s: failure %q, want one saying %q", c.name, got, c.fail)
		}
	}
}

// TestRPCIDs_Numbered verifies RPCIDs' names.
func TestRPCIDs_Numbered(t *testing.T) {
	if got := strings.Join(RPCIDs("s", 4), " "); got != "s1 s2 s3 s4" {
		t.Errorf("RPCIDs(s, 4) = %s", got)
	}
}
