package sim

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/trace"
)

// TestHealth_ListenerGetsServedStateOnceReadyAndChanges verifies that a
// health listener registered on READY hears READY (the default), then the
// states set with SetHealth, and that the policy's picks follow them.
func TestHealth_ListenerGetsServedStateOnceReadyAndChanges(t *testing.T) {
	w := newChannel(t, `{"health":true}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Second)
	if w.State() != connectivity.Ready {
		t.Fatalf("State = %v, want READY once health is READY", w.State())
	}
	w.SetHealth(addrA, connectivity.TransientFailure)
	if w.State() != connectivity.TransientFailure {
		t.Fatalf("State = %v, want TRANSIENT_FAILURE after the backend turned unhealthy", w.State())
	}
	w.SetHealth(addrA, connectivity.TransientFailure) // unchanged: no update
	w.SetHealth(addrA, connectivity.Ready)
	var got []string
	for _, e := range kinds(w.Events(), trace.KindSubchannelHealth, "sc1") {
		got = append(got, e.State)
	}
	if want := "READY TRANSIENT_FAILURE READY"; strings.Join(got, " ") != want {
		t.Fatalf("health updates = %q, want %q", got, want)
	}
}

// TestHealth_OnlyTheCheckedServiceCounts verifies that a listener hears
// the status of the health service name the channel checks
// (Options.HealthService), not another name's, and that with health
// checking off it hears READY alone, whatever is served; every status set
// is recorded, with its service name.
func TestHealth_OnlyTheCheckedServiceCounts(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"checks svc", Options{Seed: 1, HealthService: "svc"}, "READY TRANSIENT_FAILURE"},
		{"health checking off", Options{Seed: 1, NoHealthCheck: true}, "READY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newChannel(t, `{"health":true}`, c.opts)
			w.AddBackend("b0", addrA)
			if err := w.ResolveEndpoints([]string{addrA}); err != nil {
				t.Fatal(err)
			}
			w.Advance(time.Second)
			w.SetHealth(addrA, connectivity.TransientFailure) // the overall health: not svc
			w.SetServiceHealth(addrA, "other", connectivity.TransientFailure)
			w.SetServiceHealth(addrA, "svc", connectivity.TransientFailure)
			var got []string
			for _, e := range kinds(w.Events(), trace.KindSubchannelHealth, "sc1") {
				got = append(got, e.State)
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("health updates = %q, want %q", got, c.want)
			}
			var services []string
			for _, e := range w.Events() {
				if e.Kind == trace.KindHealthSet {
					services = append(services, e.Service)
				}
			}
			if want := []string{"", "other", "svc"}; strings.Join(services, ",") != strings.Join(want, ",") {
				t.Errorf("health-set services = %q, want %q", services, want)
			}
		})
	}
}

// TestHealth_StateChangeSilencesListener verifies that once the subchannel
// leaves READY, health changes no longer reach the old listener.
func TestHealth_StateChangeSilencesListener(t *testing.T) {
	w := newChannel(t, `{"health":true}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Second)
	w.SetFault(addrA, FaultDown)
	w.SetHealth(addrA, connectivity.TransientFailure)
	if n := len(kinds(w.Events(), trace.KindSubchannelHealth, "sc1")); n != 1 {
		t.Fatalf("%d health updates, want only the first READY\n%s", n, dump(w.Events()))
	}
}

// TestSubchannel_ShutdownDeliversShutdownThenNothing verifies that a
// subchannel shut down during its backoff tells the policy SHUTDOWN once and
// never IDLE afterwards.
func TestSubchannel_ShutdownDeliversShutdownThenNothing(t *testing.T) {
	w := newChannel(t, `{"reconnect":true}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultReset)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(10 * time.Millisecond) // in backoff after the first failure
	lb := w.bal.Current().(*testLB)
	sc := lb.scs[0]
	if err := w.Resolve(resolver.State{}); err == nil {
		t.Fatal("empty resolver update accepted by the test policy")
	}
	w.Advance(5 * time.Minute)
	got := sc.states
	if len(got) == 0 || got[len(got)-1] != connectivity.Shutdown {
		t.Fatalf("delivered states %v, want SHUTDOWN last", got)
	}
	if got[len(got)-2] != connectivity.TransientFailure {
		t.Fatalf("delivered states %v, want TRANSIENT_FAILURE then SHUTDOWN", got)
	}
	if n := len(kinds(w.Events(), trace.KindSubchannelShutdown, "sc1")); n != 1 {
		t.Fatalf("%d subchannel-shutdown events, want 1", n)
	}
}

// TestSubchannel_ReResolvesOnlyWhenAsked verifies that failed attempts
// request re-resolution (counted, with the subchannel named) only with
// Options.SubchannelReResolves.
func TestSubchannel_ReResolvesOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		w := newChannel(t, `{}`, Options{Seed: 1, SubchannelReResolves: on})
		w.AddBackend("b0", addrA)
		w.SetFault(addrA, FaultReset)
		if err := w.ResolveEndpoints([]string{addrA}); err != nil {
			t.Fatal(err)
		}
		w.Advance(time.Second)
		want := 0
		if on {
			want = 1
		}
		if got := w.ResolveNowCount(); got != want {
			t.Fatalf("SubchannelReResolves=%v: ResolveNowCount = %d, want %d", on, got, want)
		}
		if on && kinds(w.Events(), trace.KindResolveNow, "sc1") == nil {
			t.Fatalf("resolve-now not attributed to sc1")
		}
	}
}

// TestNew_RejectsUnknownBuilderAndBadConfig verifies New's errors.
func TestNew_RejectsUnknownBuilderAndBadConfig(t *testing.T) {
	if _, err := New("conform_no_such_policy", "", Options{}); err == nil {
		t.Fatal("unknown builder accepted")
	}
	if _, err := New(testLBName, `{"reconnect":`, Options{}); err == nil {
		t.Fatal("malformed config accepted")
	}
}
