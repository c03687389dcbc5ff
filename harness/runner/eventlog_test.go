package runner

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestEventLog_StartRestampsAndAdvanceWakesOnAdd verifies the scenario
// timebase (events before Start at zero, later ones relative to it), the
// arrival and time orders, and that Advance returns on an Add meeting cond
// long before until.
func TestEventLog_StartRestampsAndAdvanceWakesOnAdd(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(5 * time.Second))
	l := newEventLog(func() time.Duration { return time.Duration(clock.Load()) })
	l.Add(trace.Event{T: 4 * time.Second, Kind: trace.KindNote, Detail: "before"})
	l.Start()
	if got := l.Now(); got != 0 {
		t.Errorf("Now after Start = %v, want 0", got)
	}
	l.Add(trace.Event{T: 7 * time.Second, Kind: trace.KindNote, Detail: "late"})
	l.Add(trace.Event{T: 6 * time.Second, Kind: trace.KindNote, Detail: "early"})
	clock.Store(int64(8 * time.Second))
	if got := l.Now(); got != 3*time.Second {
		t.Errorf("Now = %v, want 3s", got)
	}
	var arrival, sorted []string
	for _, e := range l.Events() {
		arrival = append(arrival, e.Detail)
	}
	for _, e := range l.Sorted() {
		sorted = append(sorted, e.Detail+"@"+e.T.String())
	}
	if want := []string{"before", "late", "early"}; !slices.Equal(arrival, want) {
		t.Errorf("Events = %v, want %v", arrival, want)
	}
	if want := []string{"before@0s", "early@1s", "late@2s"}; !slices.Equal(sorted, want) {
		t.Errorf("Sorted = %v, want %v", sorted, want)
	}

	go func() {
		time.Sleep(10 * time.Millisecond)
		l.Add(trace.Event{Kind: trace.KindNote, Detail: "wake"})
	}()
	t0 := time.Now()
	cond := func() bool { evs := l.Events(); return evs[len(evs)-1].Detail == "wake" }
	if err := l.Advance(context.Background(), cond, time.Hour); err != nil {
		t.Fatalf("Advance: %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("Advance returned after %v, not on the Add", d)
	}
}

// TestEventLog_StallsKeepOnlyTheirPartInTheScenario verifies that a stall
// the lab's watch saw before the scenario started is dropped, one that
// straddles its start is cut to the part after it, and one after it is
// kept as it is, on the scenario's timebase.
func TestEventLog_StallsKeepOnlyTheirPartInTheScenario(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(5 * time.Second))
	l := newEventLog(func() time.Duration { return time.Duration(clock.Load()) })
	stall := func(at, d time.Duration) trace.Event {
		return trace.Event{T: at, Source: trace.SourceHarness, Kind: trace.KindStall, Duration: d}
	}
	l.Add(stall(4*time.Second, 10*time.Millisecond))                     // over before the start
	l.Add(stall(5*time.Second-10*time.Millisecond, 30*time.Millisecond)) // straddles it
	l.Start()
	l.Add(stall(5*time.Second-time.Millisecond, 4*time.Millisecond)) // reported after the start, began before
	l.Add(stall(6*time.Second, 5*time.Millisecond))
	var got []string
	for _, e := range l.Sorted() {
		got = append(got, e.Duration.String()+"@"+e.T.String())
	}
	if want := []string{"20ms@0s", "3ms@0s", "5ms@1s"}; !slices.Equal(got, want) {
		t.Errorf("stalls %v, want %v", got, want)
	}
}
