package spec

import (
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestSubchannels_ByAddress verifies that the subchannel helpers find a
// subchannel by its address and read its events by its id, and that
// ConnectionFailures reads subchannel states when the trace has the
// policy's events and the capture's refusals otherwise.
func TestSubchannels_ByAddress(t *testing.T) {
	const a, b = "198.18.0.1:443", "198.18.0.2:443"
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	pol := func(n int, k trace.Kind, sc, state string) trace.Event {
		return trace.Event{T: ms(n), Source: trace.SourcePolicy, Kind: k, Subchannel: sc, State: state}
	}
	newSC := func(n int, sc, addr string) trace.Event {
		e := pol(n, trace.KindSubchannelNew, sc, "")
		e.Addrs = []string{addr}
		return e
	}
	rst := trace.Event{T: ms(4), Source: trace.SourceCapture, Kind: trace.KindRST, Addr: a}
	tr := &trace.Trace{Events: []trace.Event{
		newSC(1, "sc1", a), newSC(1, "sc2", b),
		pol(2, trace.KindSubchannelState, "sc1", "CONNECTING"), pol(2, trace.KindSubchannelState, "sc2", "CONNECTING"),
		rst, pol(5, trace.KindSubchannelState, "sc1", "TRANSIENT_FAILURE"),
		pol(6, trace.KindSubchannelShutdown, "sc1", ""),
	}}
	if got := SubchannelsOf(tr, a); len(got) != 1 || got[0].Subchannel != "sc1" {
		t.Errorf("SubchannelsOf(a) = %v, want sc1's", got)
	}
	if got := SubchannelEvents(tr, a, trace.KindSubchannelState, trace.KindSubchannelShutdown); len(got) != 3 || got[2].Kind != trace.KindSubchannelShutdown {
		t.Errorf("SubchannelEvents(a, state, shutdown) = %v, want sc1's three", got)
	}
	for _, c := range []struct {
		at   time.Duration
		want string
	}{{ms(2), ""}, {ms(3), "CONNECTING"}, {ms(6), "TRANSIENT_FAILURE"}} {
		if got := SubchannelStateBefore(tr, "sc1", c.at); got != c.want {
			t.Errorf("SubchannelStateBefore(sc1, %v) = %q, want %q", c.at, got, c.want)
		}
	}
	if got := ConnectionFailures(tr, a); !slices.Equal(got, []time.Duration{ms(5)}) {
		t.Errorf("ConnectionFailures(a) with the policy's events = %v, want sc1's TRANSIENT_FAILURE at 5ms", got)
	}
	outside := &trace.Trace{Events: trace.Select(tr.Events, func(e trace.Event) bool { return e.Source != trace.SourcePolicy })}
	if got := ConnectionFailures(outside, a); !slices.Equal(got, []time.Duration{ms(4)}) {
		t.Errorf("ConnectionFailures(a) from outside = %v, want the refusal at 4ms", got)
	}
}
