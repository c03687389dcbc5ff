package spec

import (
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// RPCs: sending them from a scenario, and reading what became of them.
// Every runner records an RPC's start (rpc-start) and its one result
// (rpc-result: the backend that answered, or the status code), so these
// read the same in every trace.

// RPCIDs are prefix1 … prefixN.
func RPCIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + string(rune('1'+i))
	}
	return out
}

// SendRPCs sends the RPCs ids one every 10 ms from at, each wait_for_ready
// with a deadline of 5 s; opts add to those or override them.
func SendRPCs(b *scenario.Builder, at time.Duration, ids []string, opts ...scenario.RPCOption) *scenario.Builder {
	for i, id := range ids {
		o := append([]scenario.RPCOption{scenario.WaitForReady(), scenario.Deadline(5 * time.Second)}, opts...)
		b.At(at+time.Duration(i)*10*time.Millisecond, scenario.RPC(id, o...))
	}
	return b
}

// SendRPCsAfter is SendRPCs timed from an event: the RPCs ids one every
// 10 ms from at after c is met.
func SendRPCsAfter(b *scenario.Builder, c scenario.Cond, at time.Duration, ids []string, opts ...scenario.RPCOption) *scenario.Builder {
	for i, id := range ids {
		o := append([]scenario.RPCOption{scenario.WaitForReady(), scenario.Deadline(5 * time.Second)}, opts...)
		b.AfterDelay(c, at+time.Duration(i)*10*time.Millisecond, scenario.RPC(id, o...))
	}
	return b
}

// RPCStart is when RPC id was sent (its rpc-start); the check fails if it
// never was.
func RPCStart(g gomega.Gomega, tr *trace.Trace, id string) time.Duration {
	evs := trace.Select(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindRPCStart && e.RPC == id })
	g.ExpectWithOffset(1, evs).NotTo(gomega.BeEmpty(), "RPC %s should have been sent", id)
	return evs[0].T
}

// RPCResult is RPC id's result; the check fails unless it has exactly one.
func RPCResult(g gomega.Gomega, tr *trace.Trace, id string) trace.Event {
	return rpcResult(g, tr, id)
}

// rpcResult is RPCResult for the helpers of this file: a failure is
// reported at their caller's caller.
func rpcResult(g gomega.Gomega, tr *trace.Trace, id string) trace.Event {
	res := trace.Select(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult && e.RPC == id })
	g.ExpectWithOffset(2, res).To(gomega.HaveLen(1), "RPC %s should have exactly one result:%s", id, Render(res))
	return res[0]
}

// succeeded reports whether an rpc-result is a success (status OK).
func succeeded(r trace.Event) bool {
	return r.Code == "" || r.Code == "OK"
}

// ServedBy is the backend that answered RPC id; the check fails unless the
// RPC has exactly one result, a success.
func ServedBy(g gomega.Gomega, tr *trace.Trace, id string) string {
	r := rpcResult(g, tr, id)
	g.ExpectWithOffset(1, succeeded(r)).To(gomega.BeTrue(), "RPC %s should succeed: %s %s", id, r.Code, r.Err)
	return r.Backend
}

// ServedByEach is ServedBy of each of ids, in order.
func ServedByEach(g gomega.Gomega, tr *trace.Trace, ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = ServedBy(g, tr, id)
	}
	return out
}

// ExpectFailed checks that RPC id has exactly one result, a failure (any
// status but OK).
func ExpectFailed(g gomega.Gomega, tr *trace.Trace, id string) {
	r := rpcResult(g, tr, id)
	g.ExpectWithOffset(1, succeeded(r)).To(gomega.BeFalse(), "RPC %s should fail; it was answered by %s", id, r.Backend)
}

// ServedOn is the address RPC id was served on: the backend's rpc-served
// event naming it, in the lab (in a trace recorded before backends named
// RPCs, the last one between the RPC's start and its result); where the
// trace has none (the simulator has no backends' events), the address of
// its last pick. The check fails when neither shows it.
func ServedOn(g gomega.Gomega, tr *trace.Trace, id string) string {
	start, r := RPCStart(g, tr, id), rpcResult(g, tr, id)
	addr := servedOn(tr, id, start, r.T)
	g.ExpectWithOffset(1, addr).NotTo(gomega.BeEmpty(), "RPC %s: no backend event or pick shows the address it was served on", id)
	return addr
}

// servedEvent is the backend's rpc-served event of RPC id, in the lab: the
// one naming it (the lab names every RPC it sends); in a trace whose
// backends name none, the last one for the RPC's method between its start
// and its result (a client's own calls, its health Watch, are other
// methods).
func servedEvent(g gomega.Gomega, tr *trace.Trace, id string) (trace.Event, bool) {
	starts := trace.Select(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindRPCStart && e.RPC == id })
	g.ExpectWithOffset(2, starts).NotTo(gomega.BeEmpty(), "RPC %s should have been sent", id)
	start, r := starts[0], rpcResult(g, tr, id)
	served := trace.Select(tr.Events, trace.OfKind(trace.KindRPCServed))
	if named := trace.Select(served, func(e trace.Event) bool { return e.RPC != "" }); len(named) > 0 {
		named = trace.Select(named, func(e trace.Event) bool { return e.RPC == id })
		if len(named) == 0 {
			return trace.Event{}, false
		}
		return named[len(named)-1], true
	}
	served = trace.Select(served, func(e trace.Event) bool {
		return e.T >= start.T && e.T <= r.T && (start.Method == "" || e.Method == start.Method)
	})
	if len(served) == 0 {
		return trace.Event{}, false
	}
	return served[len(served)-1], true
}

// ServedFrom is the client's end (ip:port) of the connection RPC id was
// served on, as the backend saw it (its rpc-served event), and whether the
// trace shows it: only the lab's backends do.
func ServedFrom(g gomega.Gomega, tr *trace.Trace, id string) (string, bool) {
	e, ok := servedEvent(g, tr, id)
	return e.Peer, ok && e.Peer != ""
}

// RequireConnectedBefore states the precondition of a check of how RPCs
// were spread over backends: each of backends had a connection established
// (a SYN-ACK to one of its addresses) before t. round_robin picks among the
// endpoints that are READY; RPCs sent while only one was (the client's
// configuration came late, one connection was slower) all go to it, which
// is right, and says nothing of the spread.
func RequireConnectedBefore(tr *trace.Trace, t time.Duration, backends ...string) {
	for _, b := range backends {
		var addrs []string
		if i := tr.Header.Scenario.BackendIndex(b); i >= 0 {
			for _, fam := range tr.Header.Scenario.Backends[i].Stack.Families() {
				addrs = append(addrs, Addr(tr, scenario.Addr(b+"/"+string(fam))))
			}
		}
		up := slices.ContainsFunc(tr.Events, func(e trace.Event) bool {
			return e.Kind == trace.KindSYNACK && e.T < t && slices.Contains(addrs, e.Addr)
		})
		verdict.Require(up, "%s had no connection established before %s: the RPCs could only go to the backends that were READY", b, trace.FormatT(t))
	}
}
