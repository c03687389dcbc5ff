package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// rpcInference rebuilds the RPCs of a trace: from rpc-start events where the
// trace has them, else from the picks that name an RPC (the first pick is
// when it was sent), else from picks that name none.
type rpcInference struct {
	rpcs    []*timedRPC
	byID    map[string]*timedRPC // by the trace's id
	started map[string]bool      // RPCs known from rpc-start
	used    map[string]bool      // scenario ids taken
	// Picks naming no RPC: after a new picker the channel re-picks every
	// queued RPC, so the next `repicks` anonymous picks are retries.
	queued, repicks, anon int
}

type timedRPC struct {
	at  time.Duration
	rpc scenario.StartRPC
	// unknownErr: the last pick failed with an error whose effect depends
	// on wait-for-ready; a later pick shows that the RPC waited.
	unknownErr bool
}

func rpcSteps(evs []trace.Event) []timedAction {
	ri := &rpcInference{byID: map[string]*timedRPC{}, started: map[string]bool{}, used: map[string]bool{}}
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindRPCStart)) {
		if e.RPC != "" && !ri.started[e.RPC] {
			ri.started[e.RPC] = true
			r := ri.start(e.RPC, e.T)
			ri.byID[e.RPC] = r
			r.rpc.WaitForReady, r.rpc.Deadline = e.WaitForReady, e.Duration
		}
	}
	for _, e := range evs {
		switch {
		case e.Kind == trace.KindBalancerState && e.Source == trace.SourcePolicy:
			ri.repicks = ri.queued
		case e.Kind == trace.KindPick && e.RPC == "":
			ri.anonymousPick(e)
		case e.Kind == trace.KindPick && !ri.started[e.RPC]:
			ri.namedPick(e)
		}
	}
	out := make([]timedAction, len(ri.rpcs))
	for i, r := range ri.rpcs {
		out[i] = timedAction{at: r.at, class: 2, action: r.rpc}
	}
	return out
}

// start adds an RPC sent at t, under a valid, unused scenario id made from
// the trace's id.
func (ri *rpcInference) start(id string, t time.Duration) *timedRPC {
	sid := validID(id)
	for n := 2; ri.used[sid]; n++ {
		sid = fmt.Sprintf("%s-%d", validID(id), n)
	}
	ri.used[sid] = true
	r := &timedRPC{at: t, rpc: scenario.RPC(sid)}
	ri.rpcs = append(ri.rpcs, r)
	return r
}

// namedPick: the first pick of an RPC is when it was sent; a pick after one
// that failed with an error of unknown effect shows it was wait-for-ready.
func (ri *rpcInference) namedPick(e trace.Event) {
	r := ri.byID[e.RPC]
	if r == nil {
		r = ri.start(e.RPC, e.T)
		ri.byID[e.RPC] = r
	} else if r.unknownErr {
		r.rpc.WaitForReady = true
	}
	r.unknownErr = e.Err != "" && e.Detail == ""
}

// anonymousPick is a retry of a queued anonymous RPC or a new one, named
// p1, p2, …
func (ri *rpcInference) anonymousPick(e trace.Event) {
	waits := e.Detail == "queued" || e.Detail == "not ready"
	if ri.repicks > 0 {
		ri.repicks--
		if !waits {
			ri.queued--
		}
		return
	}
	ri.anon++
	ri.start(fmt.Sprintf("p%d", ri.anon), e.T)
	if waits {
		ri.queued++
	}
}

// validID replaces what a scenario id may not contain with '_'.
func validID(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, id)
}
