package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

const (
	addrA = "198.18.0.10:443"
	addrB = "198.18.0.11:443"
	addr6 = "[fd00:c0f::10]:443"
)

// newChannel builds a Channel on the test policy with cfg, closed at the end of
// the test.
func newChannel(t testing.TB, cfg string, opts Options) *Channel {
	t.Helper()
	w, err := New(testLBName, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// kinds returns the events of kind k (for subchannel sc, if not empty).
func kinds(ev []trace.Event, k trace.Kind, sc string) []trace.Event {
	var out []trace.Event
	for _, e := range ev {
		if e.Kind == k && (sc == "" || e.Subchannel == sc) {
			out = append(out, e)
		}
	}
	return out
}

// stateTimes returns when subchannel sc entered state s.
func stateTimes(ev []trace.Event, sc, s string) []time.Duration {
	var out []time.Duration
	for _, e := range kinds(ev, trace.KindSubchannelState, sc) {
		if e.State == s {
			out = append(out, e.T)
		}
	}
	return out
}

// dump formats events for a failure message.
func dump(ev []trace.Event) string {
	var b strings.Builder
	for _, e := range ev {
		fmt.Fprintf(&b, "  %12v %-8s %-20s sc=%s addr=%s state=%s rpc=%s code=%s err=%s detail=%s\n",
			e.T, e.Source, e.Kind, e.Subchannel, e.Addr, e.State, e.RPC, e.Code, e.Err, e.Detail)
	}
	return b.String()
}
