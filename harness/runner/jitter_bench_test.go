package runner

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// The lab's timer jitter: how far from a client's timer the lab observes the
// effect of that timer, for the timers the suites' lab checks judge. The
// tolerance those checks use (suites/spec.LabTimer) is derived from these
// figures, measured with
//
//	cd harness/runner
//	go test -run '^$' -bench 'Lab_Conn/.*/impl=(reference|grpc-go)' -benchtime 1x -timeout 2h . -jitter.samples=300
//	go test -run '^$' -bench 'Lab_Conn/.*/impl=grpc-js' -benchtime 1x -timeout 2h . -jitter.drivers -jitter.samples=60
//	go test -run '^$' -bench 'Lab_Failover' -benchtime 1x -timeout 2h . -jitter.failover-samples=20
//
// (the defaults take a few minutes). Each benchmark runs its scenario once
// per sample, with the lab's real-time scheduling and without it
// (CONFORM_LAB_SCHED=ordinary), for the reference (in this process),
// grpc-go's own policies linked into this process, and with -jitter.drivers
// the grpc-js driver (a third party's timer, in a process of its own), on
// the machine as it is ("idle") and with one core kept busy by a second,
// ordinary process ("loaded": `sh -c 'while :; do :; done'`, started before
// the samples and killed after them). It reports the deviation of the
// observed value from the timer's figure, in µs: p50, p99, max and min (a
// negative min is an observation earlier than the timer's figure).
var jitterSamples = flag.Int("jitter.samples", 30, "lab runs per sample set of BenchmarkLab_ConnectionAttemptDelayJitter")

// BenchmarkLab_ConnectionAttemptDelayJitter measures the gap between the
// first SYN to b1's IPv6 address, which drops SYNs, and the first SYN to its
// IPv4 address (he-dropped-ipv6): A61's Connection Attempt Delay, 250 ms,
// observed through the capture's kernel timestamps. For the reference it
// also reports where the deviation arises, from the policy's own timer
// events (on the lab's monotonic clock): the timer's firing after its
// duration (timer-late: the runtime's wake-up), the IPv6 SYN after the
// timer's start (start-to-syn) and the IPv4 SYN after the timer fired
// (fire-to-syn): gap = delay + timer-late + fire-to-syn − start-to-syn.
func BenchmarkLab_ConnectionAttemptDelayJitter(b *testing.B) {
	requireLab(b)
	const delay = 250 * time.Millisecond
	forEachJitterImpl(b, func(b *testing.B, impl Impl) {
		for b.Loop() {
			var dev, late, startSYN, fireSYN []time.Duration
			for i := range *jitterSamples {
				tr := runForJitter(b, heDroppedIPv6(), impl, uint64(i+1))
				syn6 := firstSYNTo(b, tr, AddrOf("b1", 0, scenario.IPv6))
				syn4 := firstSYNTo(b, tr, AddrOf("b1", 0, scenario.IPv4))
				dev = append(dev, syn4-syn6-delay)
				if start, fire, ok := firstTimer(tr); ok {
					late = append(late, fire-start-delay)
					startSYN = append(startSYN, syn6-start)
					fireSYN = append(fireSYN, syn4-fire)
				}
			}
			reportDeviation(b, "", dev)
			if len(late) > 0 {
				reportDeviation(b, "timer-late-", late)
				b.Logf("start-to-syn %s; fire-to-syn %s", summary(startSYN), summary(fireSYN))
			}
		}
	})
}

// BenchmarkLab_FailoverTimerJitter measures A56's failover timer, 10 s,
// from outside (failover-timer-dropped-primary): p0's backend drops SYNs,
// and p1's first SYN follows p0's by the timer. Its samples are fewer
// (jitter.failover-samples), and run jitter.failover-parallel labs at once
// (each spends its 10 s waiting).
func BenchmarkLab_FailoverTimerJitter(b *testing.B) {
	requireLab(b)
	const failover = 10 * time.Second
	s := scenario.New("failover-timer-dropped-primary").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
		LB("priority_experimental", `{"children":{
			"p0":{"config":[{"pick_first":{}}]},
			"p1":{"config":[{"pick_first":{}}]}},"priorities":["p0","p1"]}`).
		At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4").With("path", "p0"), scenario.EP("b2/ipv4").With("path", "p1"))).
		At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(15 * time.Second).
		MustBuild()
	forEachJitterImpl(b, func(b *testing.B, impl Impl) {
		if impl != Reference {
			b.Skip("priority_experimental is the reference's here: grpc-go registers its own only with its xDS packages, grpc-js only for xDS")
		}
		for b.Loop() {
			trs := make([]*trace.Trace, *failoverSamples)
			errs := make([]error, len(trs))
			sem := make(chan struct{}, *failoverParallel)
			var wg sync.WaitGroup
			for i := range trs {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					trs[i], errs[i] = Run(context.Background(), s, impl, trace.ModeLab, Options{Seed: uint64(i + 1)})
				})
			}
			wg.Wait()
			var dev, late []time.Duration
			for i, tr := range trs {
				if errs[i] != nil {
					b.Fatalf("%s: %v", impl, errs[i])
				}
				dev = append(dev, firstSYNTo(b, tr, AddrOf("b2", 1, scenario.IPv4))-firstSYNTo(b, tr, AddrOf("b1", 0, scenario.IPv4))-failover)
				for _, e := range tr.Events {
					if e.Kind == trace.KindTimerFire && e.Timer == "failover" {
						if start, ok := timerStart(tr, e.TimerID); ok {
							late = append(late, e.T-start-failover)
						}
					}
				}
			}
			reportDeviation(b, "", dev)
			if len(late) > 0 {
				reportDeviation(b, "timer-late-", late)
			}
		}
	})
}

var (
	failoverSamples  = flag.Int("jitter.failover-samples", 5, "lab runs per sample set of BenchmarkLab_FailoverTimerJitter")
	failoverParallel = flag.Int("jitter.failover-parallel", 5, "labs BenchmarkLab_FailoverTimerJitter runs at once")
	jitterDrivers    = flag.Bool("jitter.drivers", false, "also measure the grpc-js driver, when it is installed")
)

// forEachJitterImpl runs f for each implementation measured, idle and
// loaded.
func forEachJitterImpl(b *testing.B, f func(*testing.B, Impl)) {
	impls := []Impl{Reference, LinkedGRPCGo}
	if *jitterDrivers {
		impls = append(impls, Driver{Impl: driver.Release{Name: driver.GRPCJS, Version: driver.DefaultGRPCJS}})
	}
	for _, sched := range []string{"realtime", "ordinary"} {
		for _, impl := range impls {
			for _, load := range []string{"idle", "loaded"} {
				b.Run(fmt.Sprintf("sched=%s/impl=%s/load=%s", sched, implName(impl), load), func(b *testing.B) {
					b.Setenv(netlab.SchedEnv, map[string]string{"realtime": "", "ordinary": "ordinary"}[sched])
					if load == "loaded" {
						busyCore(b)
					}
					f(b, impl)
				})
			}
		}
	}
}

func implName(impl Impl) string {
	switch impl {
	case Reference:
		return "reference"
	case LinkedGRPCGo:
		return "grpc-go-linked"
	}
	return impl.String()
}

// busyCore keeps one core busy with a second process until b ends.
func busyCore(b *testing.B) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the busy loop: %v", err)
	}
	// An ordinary process, whatever the benchmark's own scheduling.
	if err := unix.SchedSetAttr(cmd.Process.Pid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0); err != nil {
		b.Logf("the busy loop keeps the benchmark's scheduling: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

func runForJitter(b *testing.B, s *scenario.Scenario, impl Impl, seed uint64) *trace.Trace {
	tr, err := Run(context.Background(), s, impl, trace.ModeLab, Options{Seed: seed})
	if err != nil {
		if _, ok := impl.(Driver); ok && tr == nil {
			b.Skipf("%s: %v", impl, err)
		}
		b.Fatalf("%s: %v", impl, err)
	}
	return tr
}

// firstSYNTo is the time of the first SYN (not a retransmission) to addr.
func firstSYNTo(b *testing.B, tr *trace.Trace, addr string) time.Duration {
	for _, e := range tr.Events {
		if e.Kind == trace.KindSYN && e.Addr == addr && !e.Retransmit {
			return e.T
		}
	}
	b.Fatalf("no SYN to %s:\n%s", addr, dump(tr.Events))
	return 0
}

// firstTimer is the start and fire of the trace's first timer, when the
// trace has the policy's events.
func firstTimer(tr *trace.Trace) (start, fire time.Duration, ok bool) {
	for _, e := range tr.Events {
		if e.Kind == trace.KindTimerFire {
			start, ok = timerStart(tr, e.TimerID)
			return start, e.T, ok
		}
	}
	return 0, 0, false
}

func timerStart(tr *trace.Trace, id uint64) (time.Duration, bool) {
	for _, e := range tr.Events {
		if e.Kind == trace.KindTimerStart && e.TimerID == id {
			return e.T, true
		}
	}
	return 0, false
}

// reportDeviation reports the p50, p99, max and min of ds in µs.
func reportDeviation(b *testing.B, prefix string, ds []time.Duration) {
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[int(q*float64(len(ds)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(at(0.5), prefix+"p50-µs")
	b.ReportMetric(at(0.99), prefix+"p99-µs")
	b.ReportMetric(at(1), prefix+"max-µs")
	b.ReportMetric(at(0), prefix+"min-µs")
	b.ReportMetric(float64(len(ds)), prefix+"samples")
	b.Logf("%sdeviation %s", prefix, summary(ds))
}

// summary is min/p50/p99/max of ds, for the log.
func summary(ds []time.Duration) string {
	s := slices.Sorted(slices.Values(ds))
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))] }
	return fmt.Sprintf("min %v p50 %v p99 %v max %v (n=%d)", at(0), at(0.5), at(0.99), at(1), len(s))
}
