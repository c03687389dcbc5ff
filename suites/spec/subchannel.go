package spec

import (
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Subchannels, as the policy's events show them (trace.SourcePolicy: only
// the reference records them; a check reading them declares NeedsPolicy).
// Every subchannel of the reference has one address, pick_first's (A61,
// Move pick_first Logic Out of Subchannel), so a subchannel is named here
// by its address.

// SubchannelsOf are the subchannel-new events of the subchannels for addr
// (whose first address is addr), in time order.
func SubchannelsOf(tr *trace.Trace, addr string) []trace.Event {
	return trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelNew), func(e trace.Event) bool {
		return len(e.Addrs) > 0 && e.Addrs[0] == addr
	})
}

// SubchannelEvents are the events of kinds ks on the subchannels for addr.
func SubchannelEvents(tr *trace.Trace, addr string, ks ...trace.Kind) []trace.Event {
	ids := map[string]bool{}
	for _, e := range SubchannelsOf(tr, addr) {
		ids[e.Subchannel] = true
	}
	return trace.Select(tr.Events, trace.OfKind(ks...), func(e trace.Event) bool { return ids[e.Subchannel] })
}

// SubchannelStateBefore is the last state subchannel id reported before t;
// "" when it reported none.
func SubchannelStateBefore(tr *trace.Trace, id string, t time.Duration) string {
	st := trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState), func(e trace.Event) bool { return e.Subchannel == id && e.T < t })
	if len(st) == 0 {
		return ""
	}
	return st[len(st)-1].State
}

// ConnectionFailures are the times connection attempts to addr failed:
// its subchannels' TRANSIENT_FAILURE reports when tr has the policy's
// events; otherwise the refusals the capture saw (Refusals: an attempt
// that hangs is not seen to fail).
func ConnectionFailures(tr *trace.Trace, addr string) []time.Duration {
	if !HasPolicy(tr) {
		return Refusals(tr, addr)
	}
	var out []time.Duration
	for _, e := range SubchannelEvents(tr, addr, trace.KindSubchannelState) {
		if e.State == "TRANSIENT_FAILURE" {
			out = append(out, e.T)
		}
	}
	return out
}
