package java_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/conformlab/conform/drivers/java"
	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// testCache is the driver cache every test installs into: the driver is
// compiled once per test binary.
var testCache string

func TestMain(m *testing.M) {
	runtime.LockOSThread() // DESIGN.md: the main goroutine stays on the main thread
	dir, err := os.MkdirTemp("", "conform-java-test-")
	if err != nil {
		panic(err)
	}
	testCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// events collects a driver's events as conform's host side reads them.
type events struct {
	t  *testing.T
	ch chan trace.Event
	// seen is every event taken from ch, in order.
	seen []trace.Event
}

func (e *events) record(ev trace.Event) { e.ch <- ev }

// waitFor returns the first event from now on for which match is true,
// failing the test after timeout.
func (e *events) waitFor(what string, timeout time.Duration, match func(trace.Event) bool) trace.Event {
	e.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev := <-e.ch:
			e.seen = append(e.seen, ev)
			if match(ev) {
				return ev
			}
		case <-timer.C:
			e.t.Fatalf("no %s within %v; events: %v", what, timeout, e.seen)
		}
	}
}

func (e *events) states() []string {
	var out []string
	for _, ev := range e.seen {
		if ev.Kind == trace.KindChannelState {
			out = append(out, ev.State)
		}
	}
	return out
}

// startJava installs the driver into a scratch cache and starts it in
// client0; it skips, with the reason, without root or the packages.
func startJava(t *testing.T, lab *netlab.Lab, ev *events) *driver.Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, err := driver.Install(ctx, driver.Release{Name: driver.GRPCJava}, driver.InstallEnv{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, err := driver.Start(lab, cmd, driver.ProcessOptions{Record: ev.record})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start to hello (JVM, warm-up): %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("driver stderr (tail):\n%s", p.Stderr())
		}
	})
	return p
}

func requireLabAndJava(t *testing.T) java.System {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("grpc-java driver lab test: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	sys, err := java.Check(context.Background())
	if err != nil {
		t.Skip(err.Error())
	}
	return sys
}

func mustAddr(t *testing.T, lab *netlab.Lab, name string, fam netlab.Family) netip.AddrPort {
	t.Helper()
	ap, err := lab.Addr(name, fam)
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// TestJavaDriver_RoundRobin_EndpointsStatesReResolution: through the
// conform resolver, round_robin gets two endpoints, b1's with its refused
// IPv6 address first and its IPv4 address second; every RPC succeeds,
// answered by both backends, b1 over IPv4 only after a refused SYN to its
// IPv6 address (the endpoint's addresses tried in order); the channel goes
// IDLE, CONNECTING, READY; and when b2 goes down, the channel asks to
// re-resolve (resolve-now).
func TestJavaDriver_RoundRobin_EndpointsStatesReResolution(t *testing.T) {
	sys := requireLabAndJava(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := netlab.Start(ctx, netlab.Config{Backends: []netlab.BackendConfig{{Name: "b1"}, {Name: "b2"}}, Capture: true})
	if err != nil {
		t.Fatalf("netlab.Start: %v", err)
	}
	t.Cleanup(func() { lab.Close() })
	b1v4, b1v6 := mustAddr(t, lab, "b1", netlab.IPv4), mustAddr(t, lab, "b1", netlab.IPv6)
	b2v4 := mustAddr(t, lab, "b2", netlab.IPv4)
	if err := lab.SetFault(b1v6, netlab.FaultReset); err != nil {
		t.Fatal(err)
	}

	ev := &events{t: t, ch: make(chan trace.Event, 4096)}
	p := startJava(t, lab, ev)
	h := p.Hello()
	if h.Impl != driver.GRPCJava || h.Version != sys.GRPCVersion() || h.Observes != "every-change" {
		t.Fatalf("hello = %+v, want grpc-java %s observing every change", h, sys.GRPCVersion())
	}
	if !h.Can[driver.CanEndpoints] || !h.Can[driver.CanMixedFamilies] || !slices.Contains(h.Policies, "round_robin") {
		t.Errorf("hello = %+v, want endpoints, mixed_families and round_robin", h)
	}
	if err := p.Create("conform:///rr", `{"loadBalancingConfig":[{"round_robin":{}}]}`); err != nil {
		t.Fatal(err)
	}
	if err := p.Resolve([][]string{{b1v6.String(), b1v4.String()}, {b2v4.String()}}, nil); err != nil {
		t.Fatal(err)
	}
	ev.waitFor("READY", 20*time.Second, func(e trace.Event) bool { return e.Kind == trace.KindChannelState && e.State == "READY" })
	if got := ev.states(); !slices.Equal(got[:2], []string{"IDLE", "CONNECTING"}) {
		t.Errorf("channel states %v, want IDLE, CONNECTING, … READY", got)
	}

	// round_robin picks among READY subchannels: call until both answered (bounded).
	answered := map[string]int{}
	for n := 0; n < 100 && (answered["b1"] == 0 || answered["b2"] == 0); n++ {
		id := fmt.Sprintf("r%d", n)
		if err := p.StartRPC(driver.RPC{ID: id, Method: netlab.NameMethod, WaitForReady: true, Deadline: 10 * time.Second,
			Metadata: map[string]string{"x-conform-test": "1"}}); err != nil {
			t.Fatal(err)
		}
		r := ev.waitFor("rpc-result of "+id, 15*time.Second, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult && e.RPC == id })
		if r.Code != "OK" {
			t.Fatalf("rpc %s: %s %s", id, r.Code, r.Err)
		}
		answered[r.Backend]++
	}
	if answered["b1"] == 0 || answered["b2"] == 0 || len(answered) != 2 {
		t.Errorf("answered by %v, want b1 and b2 and nothing else", answered)
	}
	// One endpoint, one subchannel walking its addresses in order: b1's
	// IPv4 address is tried only once its IPv6 address has refused.
	var rstV6, synV4 time.Duration = -1, -1
	for _, e := range lab.Events() {
		if e.Kind == netlab.EventRST && e.Addr == b1v6 && rstV6 < 0 {
			rstV6 = e.T
		}
		if e.Kind == netlab.EventSYN && e.Addr == b1v4 && synV4 < 0 {
			synV4 = e.T
		}
		if e.Kind == netlab.EventRPC && e.Backend == "b1" && e.Addr != b1v4 {
			t.Errorf("b1 served an RPC on %s, want only %s", e.Addr, b1v4)
		}
	}
	if rstV6 < 0 || synV4 < rstV6 {
		t.Errorf("refused SYN to %s at %v, first SYN to %s at %v: want the endpoint's addresses tried in order", b1v6, rstV6, b1v4, synV4)
	}

	// b2 down: its subchannel leaves READY, and round_robin asks to re-resolve.
	if err := lab.SetBackendDown("b2", true); err != nil {
		t.Fatal(err)
	}
	ev.waitFor("resolve-now", 20*time.Second, func(e trace.Event) bool { return e.Kind == trace.KindResolveNow })

	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// The stall watch's reports, if the machine stood still: each at least
	// its 4 ms threshold long.
	for drained := false; !drained; {
		select {
		case e := <-ev.ch:
			ev.seen = append(ev.seen, e)
		default:
			drained = true
		}
	}
	stalls := 0
	for _, e := range ev.seen {
		if e.Kind == trace.KindStall {
			stalls++
			if e.Duration < 4*time.Millisecond {
				t.Errorf("stall event %+v: shorter than the watch's 4 ms threshold", e)
			}
		}
	}
	t.Logf("%d stalls reported by the driver's watch", stalls)
}
