package outlierdetection_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
)

const sec = time.Second

var (
	at     = lbtest.At
	expect = lbtest.Expect
)

// advanceTo lets virtual time run to t.
func advanceTo(w *sim.Channel, t time.Duration) { w.Advance(t - w.Now()) }

// failurePct is a config with only the failure percentage algorithm, one
// host enough.
func failurePct(extra string, threshold, volume int) string {
	return odConfig(fmt.Sprintf(`"interval": "10s", %s"failurePercentageEjection": {"threshold": %d, "minimumHosts": 1, "requestVolume": %d}`, extra, threshold, volume))
}

// TestOutlierDetection_EjectsEndpointWithAllItsAddresses verifies A61,
// Outlier Detection: calls to either address of an endpoint count for the
// endpoint (six failures on each address make twelve, over a volume of
// ten that neither address reaches alone), and the ejection covers every
// address: the endpoint's pick_first, reconnected to its other address,
// still reports the ejection through health, while its connections are
// left alone.
func TestOutlierDetection_EjectsEndpointWithAllItsAddresses(t *testing.T) {
	w := newWorld(t, failurePct(`"maxEjectionPercent": 50, `, 50, 10), 1)
	w.AddBackend("b1", lbtest.V4a, lbtest.V6a)
	w.AddBackend("b2", lbtest.V4b)
	w.ResolveEndpoints([]string{lbtest.V4a, lbtest.V6a}, []string{lbtest.V4b})
	advanceTo(w, sec)
	calls(w, lbtest.V4a, 6, true) // on the V4a subchannel
	advanceTo(w, 2*sec)
	w.SetFault(lbtest.V4a, sim.FaultDown) // pick_first moves to V6a at 2.003 s
	advanceTo(w, 3*sec)
	calls(w, lbtest.V4a, 6, true) // on the V6a subchannel
	advanceTo(w, 9*sec)
	lbtest.Eq(t, "E1 at 9 s", probe(t, w, lbtest.V4a), "b1")
	lbtest.Eq(t, "E2 at 9 s", probe(t, w, lbtest.V4b), "b2")
	advanceTo(w, 10*sec)
	lbtest.Eq(t, "E1 at 10 s", probe(t, w, lbtest.V4a), "UNAVAILABLE ejected")
	lbtest.Eq(t, "E2 at 10 s", probe(t, w, lbtest.V4b), "b2")

	// Back on V4a: a new subchannel, ejected as well.
	advanceTo(w, 11*sec)
	w.SetFault(lbtest.V4a, sim.FaultNone)
	w.SetFault(lbtest.V6a, sim.FaultDown)
	advanceTo(w, 12*sec)
	lbtest.Eq(t, "E1 at 12 s", probe(t, w, lbtest.V4a), "UNAVAILABLE ejected")
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs),
		at(0, lbtest.V4a), at(0, lbtest.V4b), at(2001*ms, lbtest.V6a), at(11*sec, lbtest.V4a))
	// Ejection shuts nothing down and connects nothing: only pick_first's
	// own moves do.
	expect(t, "shutdowns", lbtest.Shutdowns(evs), at(2003*ms, lbtest.V4a), at(11002*ms, lbtest.V6a))
}

// TestOutlierDetection_UnejectsAfterBaseTimesMultiplier verifies A50,
// Outlier Detection Behavior step 5 and Ejection and Un-ejection: an
// endpoint ejected at 10 s (base 25 s, multiplier 1) is back at the first
// interval after 35 s; ejected again at 50 s (multiplier 2) it stays out
// min(base × 2, max(base, maxEjectionTime)): until the first interval
// strictly after 100 s (110 s), or after 90 s (100 s) with a 40 s cap.
func TestOutlierDetection_UnejectsAfterBaseTimesMultiplier(t *testing.T) {
	for _, c := range []struct {
		maxEjection string
		backAt      time.Duration
	}{{"300s", 110 * sec}, {"40s", 100 * sec}} {
		t.Run("maxEjectionTime="+c.maxEjection, func(t *testing.T) {
			extra := fmt.Sprintf(`"baseEjectionTime": "25s", "maxEjectionTime": %q, "maxEjectionPercent": 50, `, c.maxEjection)
			w := newWorld(t, failurePct(extra, 50, 5), 1)
			w.AddBackend("b1", lbtest.V4a)
			w.AddBackend("b2", lbtest.V4b)
			w.ResolveEndpoints([]string{lbtest.V4a}, []string{lbtest.V4b})
			advanceTo(w, sec)
			calls(w, lbtest.V4a, 5, true)
			advanceTo(w, 10*sec)
			lbtest.Eq(t, "at 10 s", probe(t, w, lbtest.V4a), "UNAVAILABLE ejected")
			advanceTo(w, 39*sec+900*ms)
			lbtest.Eq(t, "at 39.9 s", probe(t, w, lbtest.V4a), "UNAVAILABLE ejected")
			advanceTo(w, 40*sec)
			lbtest.Eq(t, "at 40 s", probe(t, w, lbtest.V4a), "b1")
			calls(w, lbtest.V4a, 5, true) // 1 success, 5 failures
			advanceTo(w, 50*sec)
			lbtest.Eq(t, "at 50 s", probe(t, w, lbtest.V4a), "UNAVAILABLE ejected")
			advanceTo(w, c.backAt-100*ms)
			lbtest.Eq(t, "just before", probe(t, w, lbtest.V4a), "UNAVAILABLE ejected")
			advanceTo(w, c.backAt)
			lbtest.Eq(t, "back", probe(t, w, lbtest.V4a), "b1")
			// The timer runs every 10 s throughout.
			tm := lbtest.Timers(w.Events())
			lbtest.Eq(t, "first timer", tm[0], at(0, "start outlier detection interval 10s"))
			lbtest.Eq(t, "timer events", len(tm), 1+2*int(c.backAt/(10*sec)))
		})
	}
}

// ejectedOf probes every endpoint and lists the ejected ones.
func ejectedOf(t *testing.T, w *sim.Channel, addrs []string) []string {
	t.Helper()
	var out []string
	for _, a := range addrs {
		if p := probe(t, w, a); p == "UNAVAILABLE ejected" {
			out = append(out, a)
		} else if !strings.HasPrefix(p, "b") {
			t.Fatalf("probe to %s: %s", a, p)
		}
	}
	return out
}

var five = []string{lbtest.V4a, lbtest.V4b, lbtest.V4c, lbtest.V6a, lbtest.V6b}

// fiveWorld resolves five single-address endpoints, one backend each, and
// lets their pick_first children connect.
func fiveWorld(t *testing.T, cfg string, seed uint64) *sim.Channel {
	t.Helper()
	w := newWorld(t, cfg, seed)
	var eps [][]string
	for i, a := range five {
		w.AddBackend(fmt.Sprintf("b%d", i+1), a)
		eps = append(eps, []string{a})
	}
	w.ResolveEndpoints(eps...)
	advanceTo(w, sec)
	return w
}

// TestOutlierDetection_MaxEjectionPercent verifies A50, Failure Percentage
// Algorithm step 2.1: with every endpoint failing, endpoints are ejected in
// order while fewer than maxEjectionPercent of them are ejected (so 10 %
// of five still ejects one, and 0 % none).
func TestOutlierDetection_MaxEjectionPercent(t *testing.T) {
	for pct, want := range map[int][]string{
		0:   nil,
		10:  five[:1],
		20:  five[:1],
		50:  five[:3],
		100: five,
	} {
		t.Run(fmt.Sprint(pct), func(t *testing.T) {
			w := fiveWorld(t, failurePct(fmt.Sprintf(`"maxEjectionPercent": %d, `, pct), 50, 5), 1)
			for _, a := range five {
				calls(w, a, 5, true)
			}
			advanceTo(w, 10*sec)
			lbtest.Eq(t, "ejected", ejectedOf(t, w, five), want)
		})
	}
}

// TestOutlierDetection_SuccessRate verifies A50, Success Rate Algorithm:
// success rates 0.5, 1, 1, 1, 1 have mean 0.9 and standard deviation 0.2,
// so the first endpoint is ejected with stdevFactor 1900 (below 0.52) but
// not with 2100 (0.48), nor when fewer hosts than minimumHosts have the
// request volume.
func TestOutlierDetection_SuccessRate(t *testing.T) {
	for _, c := range []struct {
		name string
		sre  string
		want []string
	}{
		{"factor 1.9", `"requestVolume": 10`, five[:1]},
		{"factor 2.1", `"requestVolume": 10, "stdevFactor": 2100`, nil},
		{"minimum hosts 6", `"requestVolume": 10, "minimumHosts": 6`, nil},
		{"volume 11", `"requestVolume": 11`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := fiveWorld(t, odConfig(`"maxEjectionPercent": 100, "successRateEjection": {`+c.sre+`}`), 1)
			calls(w, five[0], 5, true)
			calls(w, five[0], 5, false)
			for _, a := range five[1:] {
				calls(w, a, 10, false)
			}
			advanceTo(w, 10*sec)
			lbtest.Eq(t, "ejected", ejectedOf(t, w, five), c.want)
		})
	}
}

// TestOutlierDetection_FailurePercentage verifies A50, Failure Percentage
// Algorithm: an endpoint is ejected when its failure percentage is
// strictly greater than the threshold, and only with the request volume.
func TestOutlierDetection_FailurePercentage(t *testing.T) {
	for _, c := range []struct {
		threshold, volume int
		want              []string
	}{{49, 10, five[:1]}, {50, 10, nil}, {49, 11, nil}} {
		t.Run(fmt.Sprintf("threshold %d volume %d", c.threshold, c.volume), func(t *testing.T) {
			w := fiveWorld(t, failurePct(`"maxEjectionPercent": 100, `, c.threshold, c.volume), 1)
			calls(w, five[0], 5, true)
			calls(w, five[0], 5, false)
			calls(w, five[1], 10, false)
			advanceTo(w, 10*sec)
			lbtest.Eq(t, "ejected", ejectedOf(t, w, five), c.want)
		})
	}
}

// TestOutlierDetection_EnforcementPercentage_SeededDraw verifies A50's
// enforcement_percentage for both algorithms: an outlier is ejected when a
// random integer in [0, 100) is below it, drawn from the policy's seeded
// randomness: the same seed decides the same way, 50 % decides both ways
// over seeds, 0 % never ejects and 100 % always does.
func TestOutlierDetection_EnforcementPercentage_SeededDraw(t *testing.T) {
	for _, alg := range []struct {
		name string
		cfg  func(enf int) string
	}{
		{"failure percentage", func(enf int) string {
			return odConfig(fmt.Sprintf(`"maxEjectionPercent": 100, "failurePercentageEjection": {"threshold": 50, "minimumHosts": 1, "requestVolume": 5, "enforcementPercentage": %d}`, enf))
		}},
		{"success rate", func(enf int) string {
			return odConfig(fmt.Sprintf(`"maxEjectionPercent": 100, "successRateEjection": {"requestVolume": 5, "enforcementPercentage": %d}`, enf))
		}},
	} {
		t.Run(alg.name, func(t *testing.T) {
			run := func(enf int, seed uint64) bool {
				w := fiveWorld(t, alg.cfg(enf), seed)
				calls(w, five[0], 5, true)
				for _, a := range five[1:] {
					calls(w, a, 5, false)
				}
				advanceTo(w, 10*sec)
				return len(ejectedOf(t, w, five)) == 1
			}
			outcomes := map[bool]int{}
			for seed := uint64(1); seed <= 12; seed++ {
				got := run(50, seed)
				if again := run(50, seed); again != got {
					t.Fatalf("seed %d: ejected %v, then %v", seed, got, again)
				}
				outcomes[got]++
				if run(0, seed) {
					t.Fatalf("seed %d: ejected with enforcementPercentage 0", seed)
				}
				if !run(100, seed) {
					t.Fatalf("seed %d: not ejected with enforcementPercentage 100", seed)
				}
			}
			if outcomes[true] == 0 || outcomes[false] == 0 {
				t.Fatalf("12 seeds at 50 %%: %v, want both outcomes", outcomes)
			}
		})
	}
}

// TestOutlierDetection_NoAlgorithm_NoTimerNoEjection verifies A50, Outlier
// Detection Behavior: with neither algorithm configured no interval timer
// runs and nothing is ejected, whatever the calls do.
func TestOutlierDetection_NoAlgorithm_NoTimerNoEjection(t *testing.T) {
	w := fiveWorld(t, odConfig(`"maxEjectionPercent": 100`), 1)
	for _, a := range five {
		calls(w, a, 200, true)
	}
	advanceTo(w, 60*sec)
	lbtest.Eq(t, "ejected", ejectedOf(t, w, five), []string(nil))
	for _, tm := range lbtest.Timers(w.Events()) {
		if strings.Contains(tm.What, "outlier") {
			t.Fatalf("timer event %v", tm)
		}
	}
}
