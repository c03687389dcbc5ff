package runner

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

func heDroppedIPv6() *scenario.Scenario {
	return scenario.New("he-dropped-ipv6").
		Backend("b1", scenario.Dual).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(30 * time.Second).
		MustBuild()
}

func firstOf(evs []trace.Event, kind trace.Kind, addr string) (trace.Event, bool) {
	for _, e := range evs {
		if e.Kind == kind && (addr == "" || e.Addr == addr || (len(e.Addrs) > 0 && e.Addrs[0] == addr)) {
			return e, true
		}
	}
	return trace.Event{}, false
}

// TestSim_HappyEyeballsScenario verifies that the reference pick_first, run
// from a scenario, attempts IPv4 exactly 250 ms after the dropped IPv6 (A61)
// and that the run ends when the RPC has its result.
func TestSim_HappyEyeballsScenario(t *testing.T) {
	s := heDroppedIPv6()
	tr, err := Run(context.Background(), s, Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	v6, v4 := AddrOf("b1", 0, scenario.IPv6), AddrOf("b1", 0, scenario.IPv4)
	syn6, ok6 := firstOf(tr.Events, trace.KindSYN, v6)
	syn4, ok4 := firstOf(tr.Events, trace.KindSYN, v4)
	if !ok6 || !ok4 {
		t.Fatalf("missing SYNs (v6 %v, v4 %v) in\n%s", ok6, ok4, dump(tr.Events))
	}
	if gap := syn4.T - syn6.T; gap != 250*time.Millisecond {
		t.Errorf("IPv4 SYN %v after IPv6 SYN, want 250ms", gap)
	}
	res, ok := firstOf(tr.Events, trace.KindRPCResult, "")
	if !ok || res.Backend != "b1" {
		t.Fatalf("rpc-result %+v (found %v), want answered by b1", res, ok)
	}
	if last := tr.Events[len(tr.Events)-1]; last.T > time.Second {
		t.Errorf("run went on to %v after the RPC finished at %v; Finish should end it", last.T, res.T)
	}
}

// TestSim_SameSeedSameBytes verifies a simulated trace is reproducible.
func TestSim_SameSeedSameBytes(t *testing.T) {
	var out [2][]byte
	for i := range out {
		tr, err := Run(context.Background(), heDroppedIPv6(), Reference, trace.ModeSim, Options{Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = trace.Canonical(tr); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("two runs with the same seed differ")
	}
}

// TestSim_AfterDelayAndUnmetWait verifies event-triggered steps with a delay,
// and that a WaitFor not met in time fails the run naming the step.
func TestSim_AfterDelayAndUnmetWait(t *testing.T) {
	s := scenario.New("after-delay").
		Backend("b1", scenario.IPv4Only).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		AfterDelay(scenario.On("subchannel-state").WithState("TRANSIENT_FAILURE"), 5*time.Second, scenario.Clear("b1/ipv4")).
		At(0, scenario.RPC("r1", scenario.Deadline(time.Second))).
		At(0, scenario.Wait(scenario.On("rpc-result").WithRPC("r1").WithCode("OK"), 8*time.Second)).
		End(time.Minute).
		MustBuild()
	tr, err := Run(context.Background(), s, Reference, trace.ModeSim, Options{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "steps[4]") || !strings.Contains(err.Error(), "rpc-result rpc=r1 code=OK") {
		t.Errorf("err = %v, want the unmet wait of steps[4] named", err)
	}
	var tf trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.KindSubchannelState && e.State == "TRANSIENT_FAILURE" {
			tf = e
			break
		}
	}
	clr, ok := firstOf(tr.Events, trace.KindFaultClear, "")
	if !ok || clr.T != tf.T+5*time.Second {
		t.Errorf("fault cleared at %v (found %v), want 5s after the first TRANSIENT_FAILURE at %v", clr.T, ok, tf.T)
	}
}

func dump(evs []trace.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// TestSim_PathAttributeRoutesPriorityChildren verifies that an endpoint's
// "path" attribute reaches the reference priority as its hierarchical path
// (A56, Hierarchical Addresses): with p0's backend refusing, the RPC is
// answered by p1's backend; without the attribute, neither child would get
// an address and the RPC could not be answered. An unknown attribute is an
// error.
func TestSim_PathAttributeRoutesPriorityChildren(t *testing.T) {
	build := func(key string) *scenario.Scenario {
		return scenario.New("priority-paths").
			Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).
			LB("priority_experimental", `{"children":{
				"p0":{"config":[{"pick_first":{}}]},
				"p1":{"config":[{"pick_first":{}}]}},"priorities":["p0","p1"]}`).
			At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4").With(key, "p0"), scenario.EP("b2/ipv4").With(key, "p1"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
			End(5 * time.Second).
			MustBuild()
	}
	tr, err := Run(context.Background(), build("path"), Reference, trace.ModeSim, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := firstOf(tr.Events, trace.KindRPCResult, "")
	if !ok || res.Backend != "b2" {
		t.Fatalf("rpc-result %+v (found %v), want answered by b2 (p1) in\n%s", res, ok, dump(tr.Events))
	}
	if _, err := Run(context.Background(), build("weight"), Reference, trace.ModeSim, Options{Seed: 1}); err == nil || !strings.Contains(err.Error(), "weight") {
		t.Errorf("an unknown attribute: err %v, want one naming it", err)
	}
}

// healthScenario: round_robin over b1, whose health service turns
// NOT_SERVING for service once the channel is READY and SERVING again once
// it has left READY, the client's service config being sc; the run ends
// when the channel is READY again.
//
// Each step waits for the state it acts on: at fixed times (100 and
// 200 ms, the run ending at 300 ms) a loaded machine's slower handshake or
// health stream met NOT_SERVING before READY, or the run ended before the
// channel came back. The root policy reports READY only once the health
// stream said SERVING (A61, generic health reporting), so the watch is
// there to carry the change. Where the step's service is not the one
// checked the channel never leaves READY: SERVING is not sent and the run
// goes to its end.
func healthScenario(name, sc, service string) *scenario.Scenario {
	return scenario.New(name).
		Backend("b1", scenario.IPv4Only).
		ServiceConfig(sc).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		After(scenario.On("balancer-state").WithState("READY"), scenario.Health("b1/ipv4", scenario.NotServing).For(service)).
		After(scenario.On("balancer-state").WithState("TRANSIENT_FAILURE"), scenario.Health("b1/ipv4", scenario.Serving).For(service)).
		After(scenario.On("balancer-state").WithState("READY").Times(2), scenario.Finish()).
		End(5 * time.Second).
		MustBuild()
}

// TestSim_HealthStep verifies that a scenario's health step reaches the
// simulated channel when its client checks that service (healthCheckConfig):
// NOT_SERVING on round_robin's only endpoint takes the channel from READY to
// TRANSIENT_FAILURE (A61, generic health reporting), and SERVING brings it
// back; a status for another service name, or a client that checks no
// health, changes nothing (A61: with no mechanism configured the watch
// reports the raw state). Every step is recorded, with its service name.
func TestSim_HealthStep(t *testing.T) {
	const rr = `{"loadBalancingConfig":[{"round_robin":{}}]`
	checked := rr + `,"healthCheckConfig":{"serviceName":"svc"}}`
	for _, c := range []struct {
		name string
		s    *scenario.Scenario
		want string
	}{
		{"checked", healthScenario("health-step", checked, "svc"), "CONNECTING READY TRANSIENT_FAILURE READY"},
		{"another service", healthScenario("health-step-other", checked, "other"), "CONNECTING READY"},
		{"not checked", healthScenario("health-step-unchecked", rr+"}", "svc"), "CONNECTING READY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Run(context.Background(), c.s, Reference, trace.ModeSim, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var states []string
			for _, e := range tr.Events {
				if e.Kind == trace.KindBalancerState && e.Policy == "" {
					states = append(states, e.State)
				}
			}
			if got := strings.Join(states, " "); got != c.want {
				t.Errorf("balancer states %q, want %q in\n%s", got, c.want, dump(tr.Events))
			}
			e, ok := firstOf(tr.Events, trace.KindHealthSet, AddrOf("b1", 0, scenario.IPv4))
			if !ok || e.Service != c.s.Steps[1].Action.(scenario.SetHealth).Service || e.State != "TRANSIENT_FAILURE" {
				t.Errorf("first health-set %+v (found %v), want the step's service and TRANSIENT_FAILURE, in\n%s", e, ok, dump(tr.Events))
			}
		})
	}
}
