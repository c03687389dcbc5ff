package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestTimers_PolicyTimersRecordedWithExactVirtualDurations verifies that a
// seam-aware policy's timers appear as timer-start (with the duration),
// timer-stop and timer-fire at exact virtual times, and that the Channel's own
// timers do not appear.
func TestTimers_PolicyTimersRecordedWithExactVirtualDurations(t *testing.T) {
	cfg := `{"timers":[{"purpose":"failover","ms":10000},{"purpose":"deactivation","ms":900000}]}`
	w := newChannel(t, cfg, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(20 * time.Minute)
	var got []trace.Event
	for _, e := range w.Events() {
		switch e.Kind {
		case trace.KindTimerStart, trace.KindTimerFire, trace.KindTimerStop:
			got = append(got, trace.Event{T: e.T, Kind: e.Kind, Timer: e.Timer, Duration: e.Duration})
		}
	}
	want := []trace.Event{
		{T: 0, Kind: trace.KindTimerStart, Timer: "failover", Duration: 10 * time.Second},
		{T: 0, Kind: trace.KindTimerStart, Timer: "deactivation", Duration: 15 * time.Minute},
		{T: 2 * time.Millisecond, Kind: trace.KindTimerStop, Timer: "failover"},
		{T: 15 * time.Minute, Kind: trace.KindTimerFire, Timer: "deactivation"},
	}
	if len(got) != len(want) {
		t.Fatalf("timer events:\n%s\nwant %v", dump(got), want)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("timer event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if w.Now() != 20*time.Minute {
		t.Fatalf("Now = %v, want 20m", w.Now())
	}
}

// TestAdvanceUntil_StopsAtTheTimerThatMakesCondTrue verifies that
// AdvanceUntil stops at the first moment cond holds, and reports false with
// time at the limit when it never does.
func TestAdvanceUntil_StopsAtTheTimerThatMakesCondTrue(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultDrop)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	syns := func() int { return len(kinds(w.Events(), trace.KindSYN, "")) }
	if !w.AdvanceUntil(func() bool { return syns() == 3 }, time.Minute) || w.Now() != 3*time.Second {
		t.Fatalf("third SYN: Now = %v, want 3s", w.Now())
	}
	if w.AdvanceUntil(func() bool { return syns() == 100 }, time.Minute) || w.Now() != 63*time.Second {
		t.Fatalf("impossible cond: Now = %v, want the limit 63s", w.Now())
	}
}
