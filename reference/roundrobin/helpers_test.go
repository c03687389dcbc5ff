package roundrobin_test

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
	"github.com/conformlab/conform/reference/roundrobin"
)

const ms = time.Millisecond

// The tests' two most frequent words (lbtest has the other helpers).
var (
	at     = lbtest.At
	expect = lbtest.Expect
)

// newWorld builds conform_round_robin with cfg in a simulator with a 1 ms RTT and
// jitter-free backoff. The trace is printed if the test fails.
func newWorld(t *testing.T, cfg string, seed uint64) *sim.Channel {
	t.Helper()
	return lbtest.NewChannel(t, roundrobin.Name, cfg, sim.Options{Seed: seed, Backoff: lbtest.ExactBackoff})
}
