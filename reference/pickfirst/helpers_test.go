package pickfirst_test

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
	"github.com/conformlab/conform/reference/pickfirst"
)

const ms = time.Millisecond

// The tests' two most frequent words (lbtest has the other helpers).
var (
	at     = lbtest.At
	expect = lbtest.Expect
)

// newWorld builds conform_pick_first with cfg in a simulator with a 1 ms RTT and
// jitter-free backoff. The trace is printed if the test fails.
func newWorld(t *testing.T, cfg string, seed uint64) *sim.Channel {
	t.Helper()
	return lbtest.NewChannel(t, pickfirst.Name, cfg, sim.Options{Seed: seed, Backoff: lbtest.ExactBackoff})
}
