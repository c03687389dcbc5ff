package main

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/trace"
)

// TestAlignOnFirstAttempt verifies a replay whose client made the field's
// attempts 35 ms later after its start (a capture's time 0 is its first
// packet) reproduces them once aligned, that a retransmission's time is
// not judged, and that a replay whose second attempt is off still departs.
func TestAlignOnFirstAttempt(t *testing.T) {
	const ms = time.Millisecond
	syn := func(at time.Duration, addr string, port int, re bool) trace.Event {
		return trace.Event{T: at, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: addr, Port: port, Retransmit: re}
	}
	v6 := "[fd00:c0f::b:1]:50051"
	field := &trace.Trace{Events: []trace.Event{syn(0, v6, 1, false), syn(1000*ms, v6, 1, true), syn(21000*ms, v6, 2, false)}}
	replayed := &trace.Trace{Events: []trace.Event{
		{T: 0, Source: trace.SourceHarness, Kind: trace.KindResolverUpdate},
		syn(35*ms, v6, 7, false), syn(1135*ms, v6, 7, true), syn(21035*ms, v6, 8, false)}}
	aligned, shift := alignOnFirstAttempt(field, replayed)
	if shift != 35*ms {
		t.Fatalf("shift %v, want 35ms", shift)
	}
	if res := compare.Traces(field, aligned, attemptsView()); !res.Equal() {
		t.Errorf("aligned replay departs:\n%s", res)
	}
	if replayed.Events[1].T != 35*ms {
		t.Errorf("aligning changed the replay's own trace")
	}
	replayed.Events[3].T = 21300 * ms
	aligned, _ = alignOnFirstAttempt(field, replayed)
	if res := compare.Traces(field, aligned, attemptsView()); res.Equal() {
		t.Errorf("a second attempt 265 ms late reproduces the field")
	}
}
