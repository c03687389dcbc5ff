package replay

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// capturedRPCs are the RPCs the capture decoded, one per rpc-result, sent
// wait-for-ready at the time the evidence allows (see FromCapture), with a
// line per RPC saying how that time was inferred.
func (in Inference) capturedRPCs(evs []trace.Event) ([]timedAction, []string) {
	syns := trace.Select(evs, trace.OfKind(trace.KindSYN))
	if len(syns) == 0 {
		return nil, nil
	}
	served := map[string]trace.Event{}
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindRPCServed)) {
		if _, seen := served[e.RPC]; !seen && e.RPC != "" {
			served[e.RPC] = e
		}
	}
	var out []timedAction
	var notes []string
	used := map[string]bool{}
	for i, e := range trace.Select(evs, trace.OfKind(trace.KindRPCResult)) {
		id := validID(e.RPC)
		if id == "" {
			id = fmt.Sprintf("r%d", i+1)
		}
		for n := 2; used[id]; n++ {
			id = fmt.Sprintf("%s-%d", validID(e.RPC), n)
		}
		used[id] = true
		req, ok := served[e.RPC]
		at, why := syns[0].T, "its request is not in the capture: placed at the first attempt"
		if ok && e.RPC != "" {
			at, why = in.requestTime(evs, syns, req)
		}
		out = append(out, timedAction{at: at, class: 2, action: scenario.RPC(id, scenario.WaitForReady())})
		notes = append(notes, fmt.Sprintf("RPC %s at %s: %s.", id, trace.FormatT(at), why))
	}
	return out, notes
}

// requestTime places an RPC whose request left at req.T, by the rules of
// FromCapture, and says why.
func (in Inference) requestTime(evs, syns []trace.Event, req trace.Event) (time.Duration, string) {
	h := trace.FormatT(req.T)
	syn, answered, synack, ok := handshake(evs, req)
	if !ok {
		return req.T, fmt.Sprintf("its request left at %s on a connection opened before the capture began: sent then", h)
	}
	ready := synack.T + (synack.T - answered.T)
	if req.T-ready > in.QueuedWithin {
		return req.T, fmt.Sprintf("its request left at %s, %s after its connection to %s was ready (about %s): sent then, on a ready connection",
			h, fmtDur(req.T-ready), req.Addr, trace.FormatT(ready))
	}
	since := lastWorking(evs, req, syn.T)
	for _, s := range syns {
		if s.T >= since && s.T <= syn.T {
			what := "the capture's first attempt"
			if since > 0 {
				what = fmt.Sprintf("the first attempt after the last sign of a working connection (%s)", trace.FormatT(since))
			}
			return s.T, fmt.Sprintf("its request left at %s as its connection to %s became ready (about %s): it had waited for a connection, "+
				"sent at some time before; placed at %s", h, req.Addr, trace.FormatT(ready), what)
		}
	}
	return syn.T, fmt.Sprintf("its request left at %s as its connection became ready: placed at that connection's first attempt", h)
}

// handshake is the first SYN, the SYN the SYN-ACK answered (the last one
// before it: a retransmission, if the first was lost) and the SYN-ACK of
// the connection a request went on (server req.Addr, client port from
// req.Peer).
func handshake(evs []trace.Event, req trace.Event) (first, answered, synack trace.Event, ok bool) {
	peer, err := netip.ParseAddrPort(req.Peer)
	if err != nil {
		return first, answered, synack, false
	}
	port := int(peer.Port())
	var haveSYN bool
	for _, e := range evs {
		if e.Addr != req.Addr || e.Port != port || e.T > req.T {
			continue
		}
		switch {
		case e.Kind == trace.KindSYN && !haveSYN:
			first, answered, haveSYN = e, e, true
		case e.Kind == trace.KindSYN:
			answered = e
		case e.Kind == trace.KindSYNACK && haveSYN:
			return first, answered, e, true
		}
	}
	return first, answered, synack, false
}

// lastWorking is the time of the last sign, before t, of a working
// connection other than req's: a request, a result or a preface on it.
func lastWorking(evs []trace.Event, req trace.Event, t time.Duration) time.Duration {
	var last time.Duration
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindRPCServed, trace.KindRPCResult, trace.KindPreface)) {
		if e.T < t && (e.Addr != req.Addr || e.Peer != req.Peer) {
			last = e.T
		}
	}
	return last
}

// fmtDur renders a positive duration as FormatT does, without the sign.
func fmtDur(d time.Duration) string { return trace.FormatT(d)[1:] }
