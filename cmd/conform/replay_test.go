package main

import (
	"context"
	"path/filepath"
	"strings"
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
	if res := compare.Traces(field, aligned, attemptsOptions()); !res.Equal() {
		t.Errorf("aligned replay departs:\n%s", res)
	}
	if replayed.Events[1].T != 35*ms {
		t.Errorf("aligning changed the replay's own trace")
	}
	replayed.Events[3].T = 21300 * ms
	aligned, _ = alignOnFirstAttempt(field, replayed)
	if res := compare.Traces(field, aligned, attemptsOptions()); res.Equal() {
		t.Errorf("a second attempt 265 ms late reproduces the field")
	}
}

// TestReplay_RecorderTrace verifies replay takes a recorder's field trace
// (a policy's events, no packets): the environment comes from the
// policy's events, and a simulated replay of the reference reproduces the
// field's subchannels and states. The field is the simulator's golden
// trace of he-dropped-ipv6 as a recorder in production writes it.
func TestReplay_RecorderTrace(t *testing.T) {
	golden, err := trace.ReadFile("../../traces/a61/he-dropped-ipv6.sim.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	field := &trace.Trace{Header: golden.Header}
	field.Header.Mode = trace.ModeField
	for _, e := range golden.Events {
		if e.Source == trace.SourcePolicy || e.Kind == trace.KindResolverUpdate || e.Kind == trace.KindExitIdle {
			field.Events = append(field.Events, e)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "field.jsonl")
	if err := trace.WriteFile(path, field); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	err = runReplay(context.Background(), []string{"--mode", "sim", "--lb", "pick_first", "--out", dir, path}, &out, &errOut)
	if err != nil {
		t.Fatalf("replay: %v\n%s%s", err, out.String(), errOut.String())
	}
	if want := "reference (sim): reproduces the field's subchannels and their states"; !strings.Contains(out.String(), want) ||
		!strings.Contains(out.String(), "traces agree: 5 events in 2 lanes") {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}
