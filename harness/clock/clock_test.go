package clock

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestVirtual_RunsDueTimersInDeadlineThenStartOrder verifies deterministic
// tie-breaking: equal deadlines fire in the order they were started.
func TestVirtual_RunsDueTimersInDeadlineThenStartOrder(t *testing.T) {
	v := NewVirtual(1, nil)
	var got []string
	rec := func(s string) func() { return func() { got = append(got, fmt.Sprintf("%s@%v", s, v.Elapsed())) } }
	v.AfterFunc("c", 3*time.Second, rec("c"))
	v.AfterFunc("a", time.Second, rec("a1"))
	v.AfterFunc("a", time.Second, rec("a2"))
	v.AfterFunc("b", 2*time.Second, func() {
		got = append(got, fmt.Sprintf("b@%v", v.Elapsed()))
		v.AfterFunc("nested", 500*time.Millisecond, rec("nested"))
	})
	v.Advance(10 * time.Second)
	want := "a1@1s a2@1s b@2s nested@2.5s c@3s"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("order = %q, want %q", s, want)
	}
	if v.Elapsed() != 10*time.Second {
		t.Fatalf("Elapsed = %v, want 10s", v.Elapsed())
	}
}

// TestVirtual_StopPreventsFiring verifies that a stopped timer never runs and
// that Stop reports whether it stopped the timer.
func TestVirtual_StopPreventsFiring(t *testing.T) {
	var events []string
	obs := ObserverFuncs{
		Started: func(id uint64, p string, d time.Duration) {
			events = append(events, fmt.Sprintf("start %d %s %v", id, p, d))
		},
		Fired:   func(id uint64, p string) { events = append(events, fmt.Sprintf("fire %d %s", id, p)) },
		Stopped: func(id uint64, p string) { events = append(events, fmt.Sprintf("stop %d %s", id, p)) },
	}
	v := NewVirtual(1, obs)
	fired := false
	tm := v.AfterFunc("failover", 10*time.Second, func() { fired = true })
	v.AfterFunc("other", time.Second, func() {})
	v.Advance(5 * time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	if tm.Stop() {
		t.Fatal("second Stop returned true")
	}
	v.Advance(time.Minute)
	if fired {
		t.Fatal("stopped timer fired")
	}
	want := "start 1 failover 10s|start 2 other 1s|fire 2 other|stop 1 failover"
	if s := strings.Join(events, "|"); s != want {
		t.Fatalf("observer saw %q, want %q", s, want)
	}
	if v.Pending() != 0 {
		t.Fatalf("Pending = %d, want 0", v.Pending())
	}
}

// TestVirtual_FifteenMinutesIsCheap verifies a long timer fires without wall
// time passing.
func TestVirtual_FifteenMinutesIsCheap(t *testing.T) {
	v := NewVirtual(1, nil)
	fired := false
	v.AfterFunc("deactivation", 15*time.Minute, func() { fired = true })
	v.Advance(15*time.Minute - time.Nanosecond)
	if fired {
		t.Fatal("fired early")
	}
	v.Advance(time.Nanosecond)
	if !fired {
		t.Fatal("did not fire at 15m")
	}
	// How little wall time it costs is BenchmarkFifteenVirtualMinutes's job.
}

// TestRand_SameSeedSameSequence verifies that randomness is reproducible.
func TestRand_SameSeedSameSequence(t *testing.T) {
	a, b := NewRand(42), NewRand(42)
	for i := 0; i < 100; i++ {
		if x, y := a.Intn(1000), b.Intn(1000); x != y {
			t.Fatalf("draw %d: %d != %d", i, x, y)
		}
	}
}

// TestWall_StopBeforeFire verifies the wall timer honours Stop and reports
// through the observer.
func TestWall_StopBeforeFire(t *testing.T) {
	stopped := make(chan string, 1)
	w := NewWall(1, ObserverFuncs{Stopped: func(_ uint64, p string) { stopped <- p }})
	tm := w.AfterFunc("x", time.Hour, func() { t.Error("fired") })
	if !tm.Stop() {
		t.Fatal("Stop returned false")
	}
	if p := <-stopped; p != "x" {
		t.Fatalf("observer got %q", p)
	}
	done := make(chan struct{})
	w.AfterFunc("y", time.Millisecond, func() { close(done) })
	<-done
}

type provider struct{ c Clock }

func (p provider) Clock() Clock { return p.c }

// TestFrom_UsesProviderElseWall verifies how policies find their clock.
func TestFrom_UsesProviderElseWall(t *testing.T) {
	v := NewVirtual(1, nil)
	if From(provider{v}) != Clock(v) {
		t.Fatal("From ignored the Provider")
	}
	if From(struct{}{}) != Wall() {
		t.Fatal("From without a Provider is not Wall")
	}
}
