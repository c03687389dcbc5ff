package spec

import (
	"slices"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// The evidence a check reads, whoever produced the trace. The reference
// records its policy's own events (trace.SourcePolicy: subchannels, the
// root's balancer-state, its resolve-now requests, timers); a third party's
// trace has only what is seen from outside the policy: the capture, the
// backends, the harness's stimuli and the driver's channel-state,
// resolve-now and rpc-result. These helpers read the policy's events when
// the trace has them and the outside evidence otherwise, with the same
// meaning; a check whose requirement cannot be seen from outside declares
// Needs: []trace.Source{trace.SourcePolicy} instead.

// HasPolicy reports whether tr records the policy's own events.
func HasPolicy(tr *trace.Trace) bool {
	return slices.ContainsFunc(tr.Events, func(e trace.Event) bool { return e.Source == trace.SourcePolicy })
}

// ChannelStates are the states the policy drove the channel through, in
// time order: the root policy's balancer-state events when tr has the
// policy's events; otherwise the driver's channel-state events, without the
// channel's own initial IDLE (reported before the first resolver update,
// when there is no policy yet: grpc-js reports it, grpc-go does not) and the
// final SHUTDOWN (the run closing the channel).
func ChannelStates(tr *trace.Trace) []trace.Event {
	if HasPolicy(tr) {
		return trace.Select(tr.Events, trace.OfKind(trace.KindBalancerState), func(e trace.Event) bool { return e.Policy == "" })
	}
	return channelStates(tr)
}

// Channel is tr's events without what the channel reports on its own
// rather than from its policy: the initial IDLE before the first resolver
// update and the final SHUTDOWN. The state matchers of harness/match read
// it as they read a whole trace.
func Channel(tr *trace.Trace) []trace.Event {
	own := map[int]bool{}
	first := firstUpdate(tr)
	seenState := false
	for i, e := range tr.Events {
		if e.Kind != trace.KindChannelState {
			continue
		}
		switch {
		case !seenState && e.State == "IDLE" && e.T <= first:
			own[i] = true
		case e.State == "SHUTDOWN":
			own[i] = true
		}
		seenState = true
	}
	out := make([]trace.Event, 0, len(tr.Events))
	for i, e := range tr.Events {
		if !own[i] {
			out = append(out, e)
		}
	}
	return out
}

func channelStates(tr *trace.Trace) []trace.Event {
	return trace.Select(Channel(tr), trace.OfKind(trace.KindChannelState))
}

// firstUpdate is the time of tr's first resolver update, or the end of the
// trace when there is none.
func firstUpdate(tr *trace.Trace) time.Duration {
	for _, e := range tr.Events {
		if e.Kind == trace.KindResolverUpdate {
			return e.T
		}
	}
	return time.Duration(1<<63 - 1)
}

// StateIs selects the events of ChannelStates(tr) in state st.
func StateIs(tr *trace.Trace, st string) trace.Pred {
	if HasPolicy(tr) {
		return func(e trace.Event) bool { return e.Kind == trace.KindBalancerState && e.Policy == "" && e.State == st }
	}
	return func(e trace.Event) bool { return e.Kind == trace.KindChannelState && e.State == st }
}

// Attempts are the connection attempts among evs: the SYNs that are not
// retransmissions, as the capture sees them (the simulator models them),
// in time order.
func Attempts(evs []trace.Event) []trace.Event {
	return trace.Select(evs, func(e trace.Event) bool { return e.Kind == trace.KindSYN && !e.Retransmit })
}

// AttemptsTo are the connection attempts among evs to addr.
func AttemptsTo(evs []trace.Event, addr string) []trace.Event {
	return trace.Select(Attempts(evs), func(e trace.Event) bool { return e.Addr == addr })
}

// Refusals are the times the connection attempts to addr were refused, as
// the capture saw them (an RST answering a SYN). An attempt that hangs
// (dropped SYNs) is not seen to fail before its deadline.
func Refusals(tr *trace.Trace, addr string) []time.Duration {
	var out []time.Duration
	for _, e := range Of(tr, trace.KindRST) {
		if e.Addr == addr {
			out = append(out, e.T)
		}
	}
	return out
}

// FailureCountReached are the times the count of connection failures to
// addrs after `after` (every one when after is negative), seen from
// outside (Refusals, counted across the addresses, in time order), reached
// n, 2n, 3n, …: the times A61 (Happy Eyeballs in the pick_first LB Policy)
// has pick_first request re-resolution once its first pass is over, n being
// its number of subchannels ("when that number reaches the number of
// subchannels"). A last round short of n failures has no time.
func FailureCountReached(tr *trace.Trace, after time.Duration, n int, addrs ...string) []time.Duration {
	var fs []time.Duration
	for _, a := range addrs {
		for _, t := range Refusals(tr, a) {
			if t > after {
				fs = append(fs, t)
			}
		}
	}
	slices.Sort(fs)
	var out []time.Duration
	for k := n - 1; k < len(fs); k += n {
		out = append(out, fs[k])
	}
	return out
}

// ReResolutions are the re-resolution requests: the policy's resolve-now
// events when tr has the policy's events; otherwise the driver's, the
// channel's requests. Those may include requests the implementation's
// subchannels make on their own (grpc-go's do), so without the policy's
// events a check can require a request where the policy must make one, but
// not count them.
func ReResolutions(tr *trace.Trace) []trace.Event {
	src := trace.SourceDriver
	if HasPolicy(tr) {
		src = trace.SourcePolicy
	}
	return trace.Select(tr.Events, trace.OfKind(trace.KindResolveNow), trace.FromSource(src))
}

// NeedsPolicy is the Needs of a check that reads what only the policy's
// events show: its timers, its subchannels and which one it chose, a
// child policy's own state.
var NeedsPolicy = []trace.Source{trace.SourcePolicy}

// PicksOf are the pick events of RPC id. The simulator names the RPC of
// each pick; the lab's recorder names none, so there they are the picks
// between id's rpc-start and its rpc-result (for specs that have one RPC
// in flight at a time).
func PicksOf(tr *trace.Trace, id string) []trace.Event {
	picks := trace.Select(tr.Events, trace.OfKind(trace.KindPick))
	if slices.ContainsFunc(picks, func(e trace.Event) bool { return e.RPC != "" }) {
		return trace.Select(picks, func(e trace.Event) bool { return e.RPC == id })
	}
	var from, to time.Duration = -1, -1
	for _, e := range tr.Events {
		switch {
		case e.RPC != id:
		case e.Kind == trace.KindRPCStart && from < 0:
			from = e.T
		case e.Kind == trace.KindRPCResult:
			to = e.T
		}
	}
	if from < 0 || to < 0 {
		return nil
	}
	return trace.Select(picks, func(e trace.Event) bool { return e.T >= from && e.T <= to })
}
