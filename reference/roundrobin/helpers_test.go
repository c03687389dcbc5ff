package roundrobin_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/roundrobin"
)

const ms = time.Millisecond

// Addresses from DESIGN.md's ranges. No backend owns an address unless a
// test adds one, and an unowned address drops SYNs.
const (
	v4a = "198.18.0.1:443"
	v4b = "198.18.0.2:443"
	v4c = "198.18.0.3:443"
	v6a = "[fd00:c0f::1]:443"
	v6b = "[fd00:c0f::2]:443"
	v6c = "[fd00:c0f::3]:443"
)

// exactBackoff is the connection backoff of connection-backoff.md without
// jitter, so that times after a failure are exact: 1 s, 1.6 s, 2.56 s, ...
var exactBackoff = sim.BackoffConfig{InitialBackoff: time.Second, Multiplier: 1.6, MaxBackoff: 120 * time.Second, MinConnectTimeout: 20 * time.Second}

// newWorld builds conform_round_robin with cfg in a simulator with a 1 ms RTT
// and jitter-free backoff. The trace is printed if the test fails.
func newWorld(t *testing.T, cfg string, seed uint64) *sim.World {
	t.Helper()
	w, err := sim.New(roundrobin.Name, cfg, sim.Options{Seed: seed, Backoff: exactBackoff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("trace:\n" + dump(w.Events()))
		}
		w.Close()
	})
	return w
}

func dump(evs []trace.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%12v %-8s %-19s %s %s %v %s %s %s %s %s\n", e.T, e.Source, e.Kind, e.Subchannel, e.Addr, e.Addrs, e.State, e.Timer, e.Err, e.RPC, e.Detail)
	}
	return b.String()
}

// scAddrs maps subchannel ids to their (single) address.
func scAddrs(evs []trace.Event) map[string]string {
	m := map[string]string{}
	for _, e := range evs {
		if e.Kind == trace.KindSubchannelNew && len(e.Addrs) > 0 {
			m[e.Subchannel] = strings.Join(e.Addrs, ",")
		}
	}
	return m
}

// stamped is an event reduced to what the rules talk about: its time and
// one word.
type stamped struct {
	T    time.Duration
	What string
}

func (s stamped) String() string { return fmt.Sprintf("%v %s", s.T, s.What) }

// pick returns, for every event of kind k (source policy), its time and
// what(e).
func pick(evs []trace.Event, k trace.Kind, what func(trace.Event) string) []stamped {
	var out []stamped
	for _, e := range evs {
		if e.Source == trace.SourcePolicy && e.Kind == k {
			out = append(out, stamped{e.T, what(e)})
		}
	}
	return out
}

// connects lists Connect calls as "time address".
func connects(evs []trace.Event) []stamped {
	m := scAddrs(evs)
	return pick(evs, trace.KindSubchannelConnect, func(e trace.Event) string { return m[e.Subchannel] })
}

// created lists subchannel creations as "time address".
func created(evs []trace.Event) []stamped {
	return pick(evs, trace.KindSubchannelNew, func(e trace.Event) string { return strings.Join(e.Addrs, ",") })
}

// shutdowns lists subchannel shutdowns as "time address".
func shutdowns(evs []trace.Event) []stamped {
	m := scAddrs(evs)
	return pick(evs, trace.KindSubchannelShutdown, func(e trace.Event) string { return m[e.Subchannel] })
}

// states lists the policy's reported states.
func states(evs []trace.Event) []stamped {
	return pick(evs, trace.KindBalancerState, func(e trace.Event) string { return e.State })
}

// resolveNows lists re-resolution requests.
func resolveNows(evs []trace.Event) []stamped {
	return pick(evs, trace.KindResolveNow, func(trace.Event) string { return "resolve-now" })
}

// timers lists timer events as "start <purpose> <duration>", "fire <purpose>"
// or "stop <purpose>".
func timers(evs []trace.Event) []stamped {
	var out []stamped
	for _, e := range evs {
		switch e.Kind {
		case trace.KindTimerStart:
			out = append(out, stamped{e.T, fmt.Sprintf("start %s %v", e.Timer, e.Duration)})
		case trace.KindTimerFire:
			out = append(out, stamped{e.T, "fire " + e.Timer})
		case trace.KindTimerStop:
			out = append(out, stamped{e.T, "stop " + e.Timer})
		}
	}
	return out
}

func at(t time.Duration, what string) stamped { return stamped{t, what} }

// expect compares a list of stamped events with want.
func expect(t *testing.T, what string, got []stamped, want ...stamped) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// rpcResult returns the rpc-result event of rpc id.
func rpcResult(t *testing.T, evs []trace.Event, id string) trace.Event {
	t.Helper()
	for _, e := range evs {
		if e.Kind == trace.KindRPCResult && e.RPC == id {
			return e
		}
	}
	t.Fatalf("no result for RPC %s", id)
	return trace.Event{}
}
