package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/conformlab/conform/harness/trace"
)

// DefaultMethod is the method RPCs call unless RPCOptions.Method says
// otherwise.
const DefaultMethod = "/conform.lab.Backend/Name"

// RPCOptions are the attributes of one simulated RPC.
type RPCOptions struct {
	WaitForReady bool
	Deadline     time.Duration // relative to StartRPC; zero means none
	Metadata     metadata.MD   // outgoing metadata, visible to the picker
	Method       string        // full method name; DefaultMethod if empty
}

// rpc is one RPC in flight. Its fields are guarded by w.mu.
type rpc struct {
	id       string
	opts     RPCOptions
	ctx      context.Context
	finished bool
	triedGen uint64 // the picker generation last tried; 0: none yet
	lastErr  error  // the last picker error of a wait-for-ready RPC
	deadline *simTimer
	done     func(balancer.DoneInfo)
}

// StartRPC sends an RPC (recorded as rpc-start) and picks for it.
func (w *Channel) StartRPC(id string, o RPCOptions) {
	if o.Method == "" {
		o.Method = DefaultMethod
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	r := &rpc{id: id, opts: o, ctx: metadata.NewOutgoingContext(context.Background(), o.Metadata)}
	w.recordLocked(trace.Event{Source: trace.SourceHarness, Kind: trace.KindRPCStart, RPC: id, Method: o.Method, WaitForReady: o.WaitForReady, Duration: o.Deadline})
	if o.Deadline > 0 {
		r.deadline = w.afterLocked("rpc deadline", o.Deadline, func() { w.deadlineLocked(r) })
	}
	w.queued = append(w.queued, r)
	w.activeLocked(1)
	w.enqueuePickLocked(r)
	w.mu.Unlock()
	w.settle()
}

// enqueuePickLocked queues a pick for r, serialized with the balancer: a
// picker may call back into its policy (an idle picker's ExitIdle).
func (w *Channel) enqueuePickLocked(r *rpc) {
	w.ser.enqueue(func() { w.pick(r) })
}

// pick runs one pick for a queued RPC with the current picker, unless that
// picker was already tried (grpc-go's picker wrapper waits for a new one).
func (w *Channel) pick(r *rpc) {
	w.mu.Lock()
	p, gen := w.picker, w.pickerGen
	if w.closed || r.finished || p == nil || r.triedGen == gen {
		w.mu.Unlock()
		return
	}
	r.triedGen = gen
	w.mu.Unlock()
	res, err := p.Pick(balancer.PickInfo{FullMethodName: r.opts.Method, Ctx: r.ctx})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || r.finished {
		return
	}
	if err != nil {
		w.pickErrorLocked(r, err)
		return
	}
	w.pickedLocked(r, res)
}

func (w *Channel) pickErrorLocked(r *rpc, err error) {
	e := trace.Event{Kind: trace.KindPick, RPC: r.id, Err: err.Error()}
	switch st, isStatus := status.FromError(err); {
	case errors.Is(err, balancer.ErrNoSubConnAvailable):
		e.Detail = "queued"
		w.recordLocked(e)
	case isStatus:
		// A status error ends the RPC whatever its wait-for-ready.
		e.Detail = "dropped"
		w.recordLocked(e)
		w.finishLocked(r, st.Code(), st.Message(), "")
	case !r.opts.WaitForReady:
		e.Detail = "failed"
		w.recordLocked(e)
		w.finishLocked(r, codes.Unavailable, err.Error(), "")
	default:
		e.Detail = "queued"
		r.lastErr = err
		w.recordLocked(e)
	}
}

// pickedLocked handles a picked SubConn: a READY one carries the RPC, any
// other makes the RPC wait for the next picker. The pick event carries the
// session address list the picker reported (trace.SessionAddrsKey), which
// a real channel would send to the backend with the RPC.
func (w *Channel) pickedLocked(r *rpc, res balancer.PickResult) {
	sc, ours := res.SubConn.(*subConn)
	session := trace.SplitSessionAddrs(res.Metadata.Get(trace.SessionAddrsKey))
	switch {
	case !ours || sc.w != w:
		w.recordLocked(trace.Event{Kind: trace.KindPick, RPC: r.id, Err: fmt.Sprintf("picked SubConn of type %T is not this channel's", res.SubConn), Detail: "queued"})
	case sc.state != connectivity.Ready || sc.conn == nil:
		w.recordLocked(trace.Event{Kind: trace.KindPick, RPC: r.id, Subchannel: sc.id, SessionAddrs: session, State: sc.state.String(), Detail: "not ready"})
		if res.Done != nil {
			w.ser.enqueue(func() { res.Done(balancer.DoneInfo{}) })
		}
	default:
		c := sc.conn
		w.recordLocked(trace.Event{Kind: trace.KindPick, RPC: r.id, Subchannel: sc.id, Addr: c.addr, SessionAddrs: session})
		w.dequeueLocked(r)
		r.done = res.Done
		w.afterLocked("rpc", w.opts.RTT, func() { w.completeLocked(r, c) })
		return
	}
	// Wait for a picker newer than the one just tried; it may already be here.
	if r.triedGen != w.pickerGen {
		w.enqueuePickLocked(r)
	}
}

// completeLocked ends an RPC carried by connection c: answered by the backend
// owning c's address, with its code if the address has FaultFailRPCs now,
// or UNAVAILABLE if c died meanwhile.
func (w *Channel) completeLocked(r *rpc, c *conn) {
	if r.finished {
		return
	}
	if !c.alive {
		w.finishLocked(r, codes.Unavailable, errConnectionLost.Error(), "")
		return
	}
	if w.faults[c.addr] == FaultFailRPCs {
		// The lab's backend's message (netlab.FailMessage).
		w.finishLocked(r, w.failCodes[c.addr], "fault fail_rpcs on "+c.addr, "")
		return
	}
	w.finishLocked(r, codes.OK, "", w.backends[c.addr])
}

// deadlineLocked ends an RPC whose deadline passed, with the message grpc-go
// gives one still waiting for a pick.
func (w *Channel) deadlineLocked(r *rpc) {
	r.deadline = nil
	msg := "context deadline exceeded while waiting for connections to become ready"
	if r.lastErr != nil {
		msg = "latest balancer error: " + r.lastErr.Error()
	}
	w.finishLocked(r, codes.DeadlineExceeded, msg, "")
}

// finishLocked records the RPC's result and calls the picker's Done.
func (w *Channel) finishLocked(r *rpc, code codes.Code, msg, backend string) {
	r.finished = true
	w.activeLocked(-1)
	r.deadline.stopLocked(w)
	w.dequeueLocked(r)
	e := trace.Event{Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: r.id, Code: trace.CodeName(code), Backend: backend, Err: msg}
	w.recordLocked(e)
	if r.done != nil {
		done, info := r.done, balancer.DoneInfo{}
		if code != codes.OK {
			info.Err = status.Error(code, msg)
		}
		w.ser.enqueue(func() { done(info) })
	}
}

func (w *Channel) dequeueLocked(r *rpc) {
	for i, q := range w.queued {
		if q == r {
			w.queued = append(w.queued[:i], w.queued[i+1:]...)
			return
		}
	}
}
