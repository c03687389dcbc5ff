package netlab

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestStallWatch_ReportsEveryWakeAndEnds verifies that the watch reports
// each wake-up with its intended time (a step after the last look at the
// clock) and its lateness, and that Close ends its goroutine.
func TestStallWatch_ReportsEveryWakeAndEnds(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	rec := newRecorder(nil)
	type wake struct{ at, late, seen time.Duration }
	var mu sync.Mutex
	var wakes []wake
	enough := make(chan struct{})
	w := watchStalls(rec.now, StallStep, func(at, late time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		wakes = append(wakes, wake{at, late, rec.now()})
		if len(wakes) == 5 {
			close(enough)
		}
	})
	<-enough
	w.Close()
	mu.Lock()
	defer mu.Unlock()
	n := len(wakes)
	for i, k := range wakes {
		if k.late < -StallStep || k.at+k.late > k.seen {
			t.Errorf("wake %d: at %v, late %v, reported at %v: lateness outside what a sleep of %v can give", i, k.at, k.late, k.seen, StallStep)
		}
		if i > 0 && k.at < wakes[i-1].at+StallStep {
			t.Errorf("wake %d at %v, less than a step after wake %d at %v", i, k.at, i-1, wakes[i-1].at)
		}
	}
	if len(wakes) != n {
		t.Errorf("the watch reported after Close")
	}
	// Close returns when the goroutine has closed done; it exits right
	// after, but not synchronously.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if got := runtime.NumGoroutine(); got > goroutines {
		t.Errorf("%d goroutines after Close, %d before", got, goroutines)
	}
}

// TestLab_StallWatchRecordsStallsAndEndsWithTheLab verifies that a lab with
// WatchStalls runs a watch whose wake-ups StallThreshold late or more become
// EventStall events (a late wake-up is fed to the lab's wake function: the
// machine cannot be made to stall on demand), and that Close ends the
// watch and leaves nothing else behind.
func TestLab_StallWatchRecordsStallsAndEndsWithTheLab(t *testing.T) {
	requireRoot(t)
	check := hygiene(t)
	got := make(chan Event, 16)
	l, err := Start(context.Background(), Config{Backends: []BackendConfig{{Name: "b1"}}, WatchStalls: true,
		OnEvent: func(e Event) {
			if e.Kind == EventStall && e.Late == 37*time.Millisecond {
				got <- e
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if l.stalls == nil {
		t.Fatal("WatchStalls: no watch running")
	}
	at := l.Now()
	recordStalls(l.rec)(at, StallThreshold-time.Microsecond) // under the threshold: not a stall
	recordStalls(l.rec)(at, 37*time.Millisecond)
	if e := <-got; e.T != at {
		t.Errorf("stall event %v, want one at %v", e, at)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Events() {
		if e.Kind == EventStall && e.Late < StallThreshold {
			t.Errorf("%v: a wake-up under the threshold recorded as a stall", e)
		}
	}
	check()
}

// BenchmarkStallWatch measures the watch's cost in CPU (this process's CPU
// time over wall time while only the watch runs: "cpu-%" of one core) and
// its view of the machine: the lateness of its wake-ups (p50, p99, p99.9,
// max, in µs) and the share of them that are stalls (StallThreshold late or
// more) and that are 10 ms late or more (the stall that makes a timer check
// inconclusive, suites/spec.StallLimit). Each iteration is one step. Run it
// idle and with one core busy:
//
//	go test ./netlab -run '^$' -bench StallWatch -benchtime 10000x -count 2
//	sh -c 'while :; do :; done' & go test ./netlab -run '^$' -bench StallWatch -benchtime 10000x -count 2; kill $!
//
// Measured on a 2-core VM (AMD EPYC, Linux 6.18) shared with another
// user's work (load 2.5 before the busy loop):
//
//	                cpu-%      p50         p99         p99.9       max        | stall-%   over-10ms-%
//	idle            3.9–4.1    182–191 µs  1.4–1.8 ms  7.6–8.5 ms  25–26 ms   | 0.2–0.3   0.07–0.08
//	one core busy   2.9–3.5    157–172 µs  2.1–4.3 ms  6.3–30 ms   40–159 ms  | 0.3–1.1   0.05–0.4
//
// (a wake-up is every 2 ms: 0.07 % of them is one stall of 10 ms or more
// in about 3 s, in a process that does nothing else; beside a lab run's
// work fewer: suites/spec.StallLimit says how often one falls near a timer
// a check judges).
func BenchmarkStallWatch(b *testing.B) {
	rec := newRecorder(nil)
	lates := make([]time.Duration, 0, b.N)
	done := make(chan struct{})
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	b.ResetTimer()
	w := watchStalls(rec.now, StallStep, func(_, late time.Duration) {
		if len(lates) < b.N { // on the watch's goroutine only: no lock
			lates = append(lates, late)
			if len(lates) == b.N {
				close(done)
			}
		}
	})
	<-done
	w.Close()
	b.StopTimer()
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	b.ReportMetric(100*float64(cpu)/float64(wall), "cpu-%")
	slices.Sort(lates)
	at := func(q float64) float64 {
		return float64(lates[int(q*float64(len(lates)-1))]) / float64(time.Microsecond)
	}
	share := func(min time.Duration) float64 {
		n := 0
		for _, l := range lates {
			if l >= min {
				n++
			}
		}
		return 100 * float64(n) / float64(len(lates))
	}
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(at(0.999), "p99.9-µs")
	b.ReportMetric(at(1), "max-µs")
	b.ReportMetric(share(StallThreshold), "stall-%")
	b.ReportMetric(share(10*time.Millisecond), "over-10ms-%")
}
