package ringhash

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
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

// hashHeader is the request hash header of the tests' config.
const hashHeader = "x-conform-hash"

var headerConfig = `{"requestHashHeader":"` + hashHeader + `"}`

// exactBackoff is connection-backoff.md's backoff without jitter, so that
// times after a failure are exact: 1 s, 1.6 s, 2.56 s, ...
var exactBackoff = sim.BackoffConfig{InitialBackoff: time.Second, Multiplier: 1.6, MaxBackoff: 120 * time.Second, MinConnectTimeout: 20 * time.Second}

// newWorld builds conform_ring_hash with cfg in a simulator with a 1 ms RTT
// and jitter-free backoff. The trace is printed if the test fails.
func newWorld(t *testing.T, cfg string, seed uint64) *sim.World {
	t.Helper()
	w, err := sim.New(Name, cfg, sim.Options{Seed: seed, Backoff: exactBackoff})
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
		fmt.Fprintf(&b, "%12v %-8s %-19s %s %s %v %s %s %s %s %s %s %s\n", e.T, e.Source, e.Kind, e.Subchannel, e.Addr, e.Addrs, e.State, e.Timer, e.RPC, e.Backend, e.Code, e.Err, e.Detail)
	}
	return b.String()
}

// withKey is an RPC carrying key in the request hash header.
func withKey(key string, o sim.RPCOptions) sim.RPCOptions {
	o.Metadata = metadata.Pairs(hashHeader, key)
	return o
}

// stamped is an event reduced to its time and one word.
type stamped struct {
	T    time.Duration
	What string
}

func (s stamped) String() string { return fmt.Sprintf("%v %s", s.T, s.What) }

func at(t time.Duration, what string) stamped { return stamped{t, what} }

func pick(evs []trace.Event, k trace.Kind, what func(trace.Event) string) []stamped {
	var out []stamped
	for _, e := range evs {
		if e.Source == trace.SourcePolicy && e.Kind == k {
			out = append(out, stamped{e.T, what(e)})
		}
	}
	return out
}

// scAddrs maps subchannel ids to their address.
func scAddrs(evs []trace.Event) map[string]string {
	m := map[string]string{}
	for _, e := range evs {
		if e.Kind == trace.KindSubchannelNew {
			m[e.Subchannel] = strings.Join(e.Addrs, ",")
		}
	}
	return m
}

// created lists subchannel creations as "time address".
func created(evs []trace.Event) []stamped {
	return pick(evs, trace.KindSubchannelNew, func(e trace.Event) string { return strings.Join(e.Addrs, ",") })
}

// connects lists Connect calls as "time address".
func connects(evs []trace.Event) []stamped {
	m := scAddrs(evs)
	return pick(evs, trace.KindSubchannelConnect, func(e trace.Event) string { return m[e.Subchannel] })
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

// distinctStates is states without consecutive repeats.
func distinctStates(evs []trace.Event) []stamped {
	var out []stamped
	for _, s := range states(evs) {
		if len(out) == 0 || out[len(out)-1].What != s.What {
			out = append(out, s)
		}
	}
	return out
}

func expect(t *testing.T, what string, got []stamped, want ...stamped) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// rpcResult returns the rpc-result event of RPC id.
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

// endpointsOf makes one endpoint per list of addresses.
func endpointsOf(lists ...[]string) []resolver.Endpoint {
	var eps []resolver.Endpoint
	for _, l := range lists {
		var e resolver.Endpoint
		for _, a := range l {
			e.Addresses = append(e.Addresses, resolver.Address{Addr: a})
		}
		eps = append(eps, e)
	}
	return eps
}

// ringFor is the ring the policy should build, with the default sizes, for
// members given as first address and weight.
func ringFor(members ...ringMember) ring {
	return newRing(members, defaultMinRingSize, defaultMaxRingSize)
}

func m1(keys ...string) []ringMember {
	var out []ringMember
	for _, k := range keys {
		out = append(out, ringMember{key: k, weight: 1})
	}
	return out
}

// walk returns the distinct members in ring order starting at the entry
// the key's hash selects.
func walk(r ring, members []ringMember, key string) []string {
	first := r.find(xxh64(key))
	seen := map[int]bool{}
	var out []string
	for i := range r {
		m := r[(first+i)%len(r)].member
		if !seen[m] {
			seen[m] = true
			out = append(out, members[m].key)
		}
	}
	return out
}

// keyed sends one RPC per key (wait for ready, ids "<prefix><key>"), lets
// dur pass and returns the backend that answered each (or "code: err").
func keyed(t *testing.T, w *sim.World, prefix string, keys []string, dur time.Duration) []string {
	t.Helper()
	for _, k := range keys {
		w.StartRPC(prefix+k, withKey(k, sim.RPCOptions{WaitForReady: true}))
	}
	w.Advance(dur)
	evs := w.Events()
	out := make([]string, len(keys))
	for i, k := range keys {
		r := rpcResult(t, evs, prefix+k)
		out[i] = r.Backend
		if r.Backend == "" {
			out[i] = r.Code + ": " + r.Err
		}
	}
	return out
}

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user-%d", i)
	}
	return out
}
