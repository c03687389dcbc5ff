package lbtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// Stamped is an event reduced to what the rules talk about: its time and
// one word.
type Stamped struct {
	T    time.Duration
	What string
}

func (s Stamped) String() string { return fmt.Sprintf("%v %s", s.T, s.What) }

// At is the Stamped what at t.
func At(t time.Duration, what string) Stamped { return Stamped{t, what} }

// Expect compares a list of stamped events with want.
func Expect(t *testing.T, what string, got []Stamped, want ...Stamped) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// Pick returns, for every event of kind k (source policy), its time and
// what(e).
func Pick(evs []trace.Event, k trace.Kind, what func(trace.Event) string) []Stamped {
	var out []Stamped
	for _, e := range evs {
		if e.Source == trace.SourcePolicy && e.Kind == k {
			out = append(out, Stamped{e.T, what(e)})
		}
	}
	return out
}

// SCAddrs maps subchannel ids to their addresses, joined by commas.
func SCAddrs(evs []trace.Event) map[string]string {
	m := map[string]string{}
	for _, e := range evs {
		if e.Kind == trace.KindSubchannelNew && len(e.Addrs) > 0 {
			m[e.Subchannel] = strings.Join(e.Addrs, ",")
		}
	}
	return m
}

// Connects lists Connect calls as "time address".
func Connects(evs []trace.Event) []Stamped {
	m := SCAddrs(evs)
	return Pick(evs, trace.KindSubchannelConnect, func(e trace.Event) string { return m[e.Subchannel] })
}

// Created lists subchannel creations as "time address".
func Created(evs []trace.Event) []Stamped {
	return Pick(evs, trace.KindSubchannelNew, func(e trace.Event) string { return strings.Join(e.Addrs, ",") })
}

// Shutdowns lists subchannel shutdowns as "time address".
func Shutdowns(evs []trace.Event) []Stamped {
	m := SCAddrs(evs)
	return Pick(evs, trace.KindSubchannelShutdown, func(e trace.Event) string { return m[e.Subchannel] })
}

// States lists the policy's reported states.
func States(evs []trace.Event) []Stamped {
	return Pick(evs, trace.KindBalancerState, func(e trace.Event) string { return e.State })
}

// ResolveNows lists re-resolution requests.
func ResolveNows(evs []trace.Event) []Stamped {
	return Pick(evs, trace.KindResolveNow, func(trace.Event) string { return "resolve-now" })
}

// Timers lists timer events as "start <purpose> <duration>", "fire
// <purpose>" or "stop <purpose>".
func Timers(evs []trace.Event) []Stamped {
	var out []Stamped
	for _, e := range evs {
		switch e.Kind {
		case trace.KindTimerStart:
			out = append(out, Stamped{e.T, fmt.Sprintf("start %s %v", e.Timer, e.Duration)})
		case trace.KindTimerFire:
			out = append(out, Stamped{e.T, "fire " + e.Timer})
		case trace.KindTimerStop:
			out = append(out, Stamped{e.T, "stop " + e.Timer})
		}
	}
	return out
}

// RPCResult returns the rpc-result event of RPC id.
func RPCResult(t *testing.T, evs []trace.Event, id string) trace.Event {
	t.Helper()
	for _, e := range evs {
		if e.Kind == trace.KindRPCResult && e.RPC == id {
			return e
		}
	}
	t.Fatalf("no result for RPC %s", id)
	return trace.Event{}
}
