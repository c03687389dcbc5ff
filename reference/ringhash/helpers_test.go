package ringhash

import (
	"fmt"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

const ms = time.Millisecond

// The tests' two most frequent words (lbtest has the other helpers).
var (
	at     = lbtest.At
	expect = lbtest.Expect
)

// hashHeader is the request hash header of the tests' config.
const hashHeader = "x-conform-hash"

var headerConfig = `{"requestHashHeader":"` + hashHeader + `"}`

// newWorld builds conform_ring_hash with cfg in a simulator with a 1 ms RTT
// and jitter-free backoff. The trace is printed if the test fails.
func newWorld(t *testing.T, cfg string, seed uint64) *sim.Channel {
	t.Helper()
	return lbtest.NewChannel(t, Name, cfg, sim.Options{Seed: seed, Backoff: lbtest.ExactBackoff})
}

// withKey is an RPC carrying key in the request hash header.
func withKey(key string, o sim.RPCOptions) sim.RPCOptions {
	o.Metadata = metadata.Pairs(hashHeader, key)
	return o
}

// distinctStates is states without consecutive repeats.
func distinctStates(evs []trace.Event) []lbtest.Stamped {
	var out []lbtest.Stamped
	for _, s := range lbtest.States(evs) {
		if len(out) == 0 || out[len(out)-1].What != s.What {
			out = append(out, s)
		}
	}
	return out
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
	first := r.find(xxhash.Sum64String(key))
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
func keyed(t *testing.T, w *sim.Channel, prefix string, keys []string, dur time.Duration) []string {
	t.Helper()
	for _, k := range keys {
		w.StartRPC(prefix+k, withKey(k, sim.RPCOptions{WaitForReady: true}))
	}
	w.Advance(dur)
	evs := w.Events()
	out := make([]string, len(keys))
	for i, k := range keys {
		r := lbtest.RPCResult(t, evs, prefix+k)
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
