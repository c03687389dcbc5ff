package sim

import (
	"math"
	"testing"
	"time"
)

// backoffDelays runs one always-refused subchannel that the policy keeps
// reconnecting for 20 virtual minutes and returns its TF→IDLE delays.
func backoffDelays(t *testing.T, seed uint64) []time.Duration {
	t.Helper()
	w := newChannel(t, `{"reconnect":true}`, Options{Seed: seed})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultReset)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(20 * time.Minute)
	ev := w.Events()
	tf, idle := stateTimes(ev, "sc1", "TRANSIENT_FAILURE"), stateTimes(ev, "sc1", "IDLE")
	var out []time.Duration
	for i := range min(len(tf), len(idle)) {
		out = append(out, idle[i]-tf[i])
	}
	return out
}

// TestSubchannel_BackoffFollowsConnectionBackoffSpec verifies that the delays
// from TRANSIENT_FAILURE to IDLE are 1 s × 1.6^n, capped at 120 s, each
// within ±20 % jitter, and that the jitter is really applied.
func TestSubchannel_BackoffFollowsConnectionBackoffSpec(t *testing.T) {
	delays := backoffDelays(t, 7)
	if len(delays) < 15 {
		t.Fatalf("only %d backoffs in 20 minutes: %v", len(delays), delays)
	}
	jittered := 0
	for n, d := range delays {
		nominal := math.Min(float64(time.Second)*math.Pow(1.6, float64(n)), float64(120*time.Second))
		if ratio := float64(d) / nominal; ratio < 0.8 || ratio > 1.2 {
			t.Errorf("backoff %d = %v, want %v ±20%% (ratio %.3f)", n, d, time.Duration(nominal), ratio)
		}
		if math.Abs(float64(d)-nominal) > float64(time.Millisecond) {
			jittered++
		}
	}
	if jittered < len(delays)/2 {
		t.Errorf("only %d of %d backoffs differ from the nominal value: no jitter? %v", jittered, len(delays), delays)
	}
}

// TestSubchannel_BackoffJitterIsSeeded verifies that the same seed gives the
// same backoffs and another seed different ones.
func TestSubchannel_BackoffJitterIsSeeded(t *testing.T) {
	a, b, c := backoffDelays(t, 42), backoffDelays(t, 42), backoffDelays(t, 43)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("runs differ in length: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 42 gave %v then %v at backoff %d", a[i], b[i], i)
		}
	}
	if c[0] == a[0] && c[1] == a[1] && c[2] == a[2] {
		t.Fatalf("seeds 42 and 43 gave the same first backoffs %v", a[:3])
	}
}

// TestSubchannel_ConnectDeadlineIsMaxOfMinConnectTimeoutAndBackoff verifies,
// on a stalled address, that every attempt lasts exactly
// Max(MIN_CONNECT_TIMEOUT, the attempt's backoff), never less than 20 s.
func TestSubchannel_ConnectDeadlineIsMaxOfMinConnectTimeoutAndBackoff(t *testing.T) {
	w := newChannel(t, `{"reconnect":true}`, Options{Seed: 3})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultStall)
	if err := w.ResolveEndpoints([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	w.Advance(40 * time.Minute)
	ev := w.Events()
	conn, tf, idle := stateTimes(ev, "sc1", "CONNECTING"), stateTimes(ev, "sc1", "TRANSIENT_FAILURE"), stateTimes(ev, "sc1", "IDLE")
	if len(idle) < 10 {
		t.Fatalf("only %d attempts ended:\n%s", len(idle), dump(ev))
	}
	sawLonger := false
	for i := range idle {
		attempt, backoff := tf[i]-conn[i], idle[i]-tf[i]
		if want := max(20*time.Second, backoff); attempt != want {
			t.Errorf("attempt %d lasted %v, want max(20s, backoff %v) = %v", i, attempt, backoff, want)
		}
		sawLonger = sawLonger || attempt > 20*time.Second
	}
	if !sawLonger {
		t.Errorf("no attempt outlasted 20 s although backoffs grow past it")
	}
}

// TestBackoffConfig_DefaultsAreTheSpecParameters verifies the zero
// BackoffConfig means connection-backoff.md's parameters.
func TestBackoffConfig_DefaultsAreTheSpecParameters(t *testing.T) {
	got := BackoffConfig{}.withDefaults()
	want := BackoffConfig{InitialBackoff: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxBackoff: 120 * time.Second, MinConnectTimeout: 20 * time.Second}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
	if d := (BackoffConfig{MinConnectTimeout: 5 * time.Second}).withDefaults(); d.Jitter != 0 || d.InitialBackoff != time.Second {
		t.Fatalf("partial config = %+v, want zero jitter kept and other fields defaulted", d)
	}
}
