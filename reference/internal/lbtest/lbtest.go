// Package lbtest holds the test helpers and test doubles the reference
// policies' tests share: building a simulated channel, reducing its trace to
// the events a rule talks about, and, for parent policies, a scripted child
// and a root that takes its config from the resolver.
//
// It is imported only by tests (it imports harness/sim); no policy imports
// it.
package lbtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/harness/trace"
)

// Addresses from DESIGN.md's ranges. No backend owns an address unless a
// test adds one, and an unowned address drops SYNs.
const (
	V4a = "198.18.0.1:443"
	V4b = "198.18.0.2:443"
	V4c = "198.18.0.3:443"
	V6a = "[fd00:c0f::1]:443"
	V6b = "[fd00:c0f::2]:443"
	V6c = "[fd00:c0f::3]:443"
)

// ExactBackoff is the connection backoff of connection-backoff.md without
// jitter, so that times after a failure are exact: 1 s, 1.6 s, 2.56 s, ...
var ExactBackoff = sim.BackoffConfig{InitialBackoff: time.Second, Multiplier: 1.6, MaxBackoff: 120 * time.Second, MinConnectTimeout: 20 * time.Second}

// NewChannel builds policy with cfg in a simulator with opts, forgetting the
// scripted children of earlier channels. The channel is closed when the test
// ends, and its trace printed if the test failed.
func NewChannel(t *testing.T, policy, cfg string, opts sim.Options) *sim.Channel {
	t.Helper()
	Kids, Builds = map[string]*Scripted{}, map[string]int{}
	w, err := sim.New(policy, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("trace:\n" + Dump(w.Events()))
		}
		w.Close()
	})
	return w
}

// Dump prints events one a line, for a failed test's log.
func Dump(evs []trace.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%12v %-8s %-19s %s %s %v %s %s %s %s %s %s %s\n", e.T, e.Source, e.Kind, e.Subchannel, e.Addr, e.Addrs, e.State, e.Timer, e.RPC, e.Backend, e.Code, e.Err, e.Detail)
	}
	return b.String()
}

// Eq fails the test at once unless got and want print the same.
func Eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
