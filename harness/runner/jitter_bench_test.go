package runner

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// The lab's timer jitter: how far from a client's timer the lab observes the
// effect of that timer, for the timers the suites' lab checks judge, and
// what the lab's stall watch (netlab, Config.WatchStalls) saw meanwhile. The
// tolerances those checks use (suites/spec.LabTimer, LabTimerDriver) and the
// stall that makes them inconclusive (spec.StallLimit,
// spec.RequireSteadyMachine) are derived from these figures (they are stated
// there), measured with
//
//	cd harness/runner
//	go test -run '^$' -bench 'Lab_Conn' -benchtime 1x -timeout 1h . -jitter.samples=150 -v
//	go test -run '^$' -bench 'Lab_Conn/.*/load=loaded' -benchtime 1x -timeout 1h . -jitter.samples=120 -jitter.busy=3 -v
//	go test -run '^$' -bench 'Lab_Conn/impl=grpc-(js|go)@' -benchtime 1x -timeout 1h . -jitter.drivers -jitter.samples=100 -v
//	go test -run '^$' -bench 'Lab_Failover/impl=reference' -benchtime 1x -timeout 1h . -jitter.failover-samples=10 -v
//
// (the defaults take a few minutes). Each benchmark runs its scenario once
// per sample, for the reference (in this process), grpc-go's own policies
// linked into this process, and with -jitter.drivers the grpc-js driver and
// grpc-go v1.85.0's (a third party's timer, in a process of its own, with
// the stall events its driver reports), on the machine as it is
// ("idle") and with -jitter.busy ordinary processes kept busy beside it
// ("loaded": `sh -c 'while :; do :; done'`, started before the samples and
// killed after them). Scheduling is the machine's own, ordinary: the lab
// once ran its threads SCHED_FIFO, which starved a driver (reverted in
// 11a07b9). It reports the deviation of the observed value from the
// timer's figure, in µs: p50, p99, max and min (a negative min is an
// observation earlier than the timer's figure); the same for the runs in
// which the stall watch saw no stall of spec's limit near the judged
// interval (steady-), and how many runs it saw one in (stalled-runs). With
// -v it logs every run: its deviation, how long after the addresses its
// first attempt left, and the stalls near the judged interval.
var (
	jitterSamples = flag.Int("jitter.samples", 30, "lab runs per sample set of BenchmarkLab_ConnectionAttemptDelayJitter")
	jitterBusy    = flag.Int("jitter.busy", 1, "busy loops a loaded sample set runs beside the lab")
	// stallLimit is spec.RequireSteadyMachine's (suites/spec imports the
	// runner, so it cannot be imported here); the benchmarks split their
	// runs by it.
	stallLimit = flag.Duration("jitter.stall-limit", 10*time.Millisecond, "the stall that makes a run unsteady (spec.StallLimit)")
	stallPad   = flag.Duration("jitter.stall-pad", 15*time.Millisecond, "how far around the judged interval a stall counts (spec.LabTimer)")
)

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
			var js jitters
			var late, startSYN, fireSYN []time.Duration
			for i := range *jitterSamples {
				tr := runForJitter(b, heDroppedIPv6(), impl, uint64(i+1))
				syn6 := firstSYNTo(b, tr, AddrOf("b1", 0, scenario.IPv6))
				syn4 := firstSYNTo(b, tr, AddrOf("b1", 0, scenario.IPv4))
				js.add(b, i, syn4-syn6-delay, tr, syn6, syn4)
				if start, fire, ok := firstTimer(tr); ok {
					b.Logf("run %d: timer-late %.3f ms start-to-syn %.3f ms", i, ms(fire-start-delay), ms(syn6-start))
					late = append(late, fire-start-delay)
					startSYN = append(startSYN, syn6-start)
					fireSYN = append(fireSYN, syn4-fire)
				}
			}
			js.report(b)
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
			var js jitters
			var late []time.Duration
			for i, tr := range trs {
				if errs[i] != nil {
					b.Fatalf("%s: %v", impl, errs[i])
				}
				syn1, syn2 := firstSYNTo(b, tr, AddrOf("b1", 0, scenario.IPv4)), firstSYNTo(b, tr, AddrOf("b2", 1, scenario.IPv4))
				js.add(b, i, syn2-syn1-failover, tr, syn1, syn2)
				for _, e := range tr.Events {
					if e.Kind == trace.KindTimerFire && e.Timer == "failover" {
						if start, ok := timerStart(tr, e.TimerID); ok {
							late = append(late, e.T-start-failover)
						}
					}
				}
			}
			js.report(b)
			if len(late) > 0 {
				reportDeviation(b, "timer-late-", late)
			}
		}
	})
}

var (
	failoverSamples  = flag.Int("jitter.failover-samples", 5, "lab runs per sample set of BenchmarkLab_FailoverTimerJitter")
	failoverParallel = flag.Int("jitter.failover-parallel", 5, "labs BenchmarkLab_FailoverTimerJitter runs at once")
	jitterDrivers    = flag.Bool("jitter.drivers", false, "also measure the grpc-js driver and grpc-go v1.85.0's, when installed")
)

// jitters are one sample set's deviations, split by what the stall watch
// saw around each run's judged interval.
type jitters struct {
	all, steady []time.Duration
	stalled     int
}

// add records run i's deviation dev of the interval [from, to] of tr, with
// the longest stall and the sum of the stalls that overlap it, padded by
// jitter.stall-pad on either side (for an interval over 500 ms, its first
// and last 250 ms so padded), as spec.RequireSteadyMachine reads them.
func (js *jitters) add(b *testing.B, i int, dev time.Duration, tr *trace.Trace, from, to time.Duration) {
	const span = 250 * time.Millisecond
	windows := [][2]time.Duration{{from - *stallPad, to + *stallPad}}
	if to-from > 2*span {
		windows = [][2]time.Duration{{from - *stallPad, from + span}, {to - span, to + *stallPad}}
	}
	var longest, sum time.Duration
	var near []string
	for _, e := range tr.Events {
		if e.Kind != trace.KindStall {
			continue
		}
		for _, w := range windows {
			if e.T < w[1] && e.T+e.Duration > w[0] {
				longest, sum = max(longest, e.Duration), sum+e.Duration
				near = append(near, fmt.Sprintf("%v@%s", e.Duration.Round(100*time.Microsecond), trace.FormatT(e.T-from)))
				break
			}
		}
	}
	js.all = append(js.all, dev)
	if longest >= *stallLimit {
		js.stalled++
	} else {
		js.steady = append(js.steady, dev)
	}
	var prompt time.Duration // the first attempt after the first resolver update
	for _, e := range tr.Events {
		if e.Kind == trace.KindResolverUpdate {
			prompt = from - e.T
			break
		}
	}
	b.Logf("run %d: deviation %8.3f ms; first attempt %6.1f ms after the addresses; stalls near the interval: longest %6.1f ms, sum %6.1f ms %s",
		i, ms(dev), ms(prompt), ms(longest), ms(sum), strings.Join(near, " "))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (js *jitters) report(b *testing.B) {
	reportDeviation(b, "", js.all)
	if len(js.steady) > 0 {
		reportDeviation(b, "steady-", js.steady)
	}
	b.ReportMetric(float64(js.stalled), "stalled-runs")
}

// forEachJitterImpl runs f for each implementation measured, idle and
// loaded.
func forEachJitterImpl(b *testing.B, f func(*testing.B, Impl)) {
	impls := []Impl{Reference, LinkedGRPCGo}
	if *jitterDrivers {
		impls = append(impls, Driver{Impl: driver.Release{Name: driver.GRPCJS, Version: driver.DefaultGRPCJS}},
			Driver{Impl: driver.Release{Name: driver.GRPCGo, Version: "v1.85.0"}})
	}
	for _, impl := range impls {
		for _, load := range []string{"idle", "loaded"} {
			b.Run(fmt.Sprintf("impl=%s/load=%s", implName(impl), load), func(b *testing.B) {
				if load == "loaded" {
					for range *jitterBusy {
						busyCore(b)
					}
				}
				f(b, impl)
			})
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

// busyCore keeps one core busy with a second, ordinary process until b
// ends.
func busyCore(b *testing.B) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting the busy loop: %v", err)
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
