package runner

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/scenario"
)

// TestNeeds_NamesWhatAScenarioNeeds verifies the capabilities derived from a
// scenario: a dual-stack endpoint needs endpoints and mixed families, an LB
// policy needs service_config, a wait-for-ready RPC wait_for_ready.
func TestNeeds_NamesWhatAScenarioNeeds(t *testing.T) {
	// pick_first flattens endpoints itself (A61): a driver without
	// endpoints can run a pick_first scenario from the flattened list.
	got := strings.Join(needs(heDroppedIPv6()), ",")
	if want := "mixed_families,service_config,wait_for_ready"; got != want {
		t.Errorf("needs(pick_first) = %s, want %s", got, want)
	}
	rr := heDroppedIPv6()
	rr.Client.LBPolicy = "round_robin"
	if got, want := strings.Join(needs(rr), ","), "endpoints,mixed_families,service_config,wait_for_ready"; got != want {
		t.Errorf("needs(round_robin) = %s, want %s", got, want)
	}
	if got := needs(flatIPv6First(0)); strings.Join(got, ",") != "mixed_families,service_config" {
		t.Errorf("needs(flat) = %v", got)
	}
}

// TestNeeds_AttemptDelayExtension verifies that a scenario configuring the
// reference's Connection Attempt Delay knob needs a driver that has one.
func TestNeeds_AttemptDelayExtension(t *testing.T) {
	s := heDroppedIPv6()
	s.Client.LBConfig = `{"connectionAttemptDelay": "50ms"}`
	if got := strings.Join(needs(s), ","); !strings.Contains(got, driver.CanAttemptDelay) {
		t.Errorf("needs = %s, want %s among them", got, driver.CanAttemptDelay)
	}
}

// TestNeeds_ShuffleKnobIsNoNeed verifies that a scenario giving pick_first
// shuffleAddressList true runs on a driver that does not declare shuffle:
// A62 says what a client without shuffling does with the knob, and the
// catalogue judges it by that rule rather than leaving it not-applicable.
func TestNeeds_ShuffleKnobIsNoNeed(t *testing.T) {
	s := heDroppedIPv6()
	s.Client.LBConfig = `{"shuffleAddressList": true}`
	if got := needs(s); slices.Contains(got, driver.CanShuffle) {
		t.Errorf("needs = %v, want no %s", got, driver.CanShuffle)
	}
	h := driver.Hello{Can: map[string]bool{driver.CanMixedFamilies: true, driver.CanServiceConfig: true, driver.CanWaitForReady: true, driver.CanShuffle: false}}
	if got := missingCapabilities(s, h); got != "" {
		t.Errorf("a driver without shuffle misses %q, want nothing", got)
	}
}

// TestNeeds_HealthCheck verifies that a client asked to check health (a
// service config with healthCheckConfig's serviceName, A17) needs a driver
// that can, and that without the service name it does not.
func TestNeeds_HealthCheck(t *testing.T) {
	for sc, want := range map[string]bool{
		`{"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{"serviceName":""}}`: true,
		`{"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{}}`:                 false,
		`{"loadBalancingConfig":[{"round_robin":{}}]}`:                                        false,
	} {
		s := scenario.New("h").Backend("b1", scenario.IPv4Only).ServiceConfig(sc).End(time.Second).MustBuild()
		if got := slices.Contains(needs(s), driver.CanHealthCheck); got != want {
			t.Errorf("%s: needs %s = %v, want %v", sc, driver.CanHealthCheck, got, want)
		}
		if got := missingCapabilities(s, driver.Hello{Can: map[string]bool{driver.CanServiceConfig: true}}); strings.Contains(got, driver.CanHealthCheck) != want {
			t.Errorf("%s: missing %q", sc, got)
		}
	}
}

// TestMissingCapabilities_ConfigStep verifies a scenario that changes the
// LB config during the run needs a driver that says config_update, and the
// policies its config steps name.
func TestMissingCapabilities_ConfigStep(t *testing.T) {
	all := driver.Hello{Can: map[string]bool{}}
	for _, c := range []string{driver.CanEndpoints, driver.CanMixedFamilies, driver.CanServiceConfig, driver.CanShuffle, driver.CanAttemptDelay, driver.CanWaitForReady, driver.CanXDS, driver.CanResolver} {
		all.Can[c] = true
	}
	s := heDroppedIPv6()
	if got := missingCapabilities(s, all); got != "" {
		t.Fatalf("without a config step: missing %q, want nothing", got)
	}
	s.Steps = append(s.Steps, scenario.Step{At: s.End, Action: scenario.Config("pick_first", `{}`)})
	if got := missingCapabilities(s, all); !strings.Contains(got, "a config step") {
		t.Errorf("with a config step: missing %q, want the config step named", got)
	}
	all.Can[driver.CanConfigUpdate] = true
	if got := missingCapabilities(s, all); got != "" {
		t.Errorf("with a config step and %s: missing %q, want nothing", driver.CanConfigUpdate, got)
	}
	all.Policies = []string{"round_robin"}
	if got := missingCapabilities(s, all); !strings.Contains(got, "the LB policy pick_first") {
		t.Errorf("a config step's policy the driver lacks: missing %q, want it named", got)
	}
}

// TestNotApplicable_IsAVerdictReason verifies a wrapped *NotApplicable
// still gives its reason to whoever turns errors into verdicts.
func TestNotApplicable_IsAVerdictReason(t *testing.T) {
	err := fmt.Errorf("he (lab, grpcio): %w", &NotApplicable{Reason: "no endpoints"})
	var na interface{ NotApplicable() string }
	if !errors.As(err, &na) || na.NotApplicable() != "no endpoints" {
		t.Errorf("errors.As(%v) = %v", err, na)
	}
}

// TestPoliciesUsed_FindsNestedPolicies verifies that the policies a
// scenario's config uses are found at any depth.
func TestPoliciesUsed_FindsNestedPolicies(t *testing.T) {
	c := scenario.Client{ServiceConfig: `{"loadBalancingConfig":[{"priority_experimental":{"children":{"p0":{"config":[{"ring_hash_experimental":{}}]}},"priorities":["p0"]}}]}`}
	if got := strings.Join(policiesUsed(c), ","); got != "priority_experimental,ring_hash_experimental" {
		t.Errorf("policiesUsed = %s", got)
	}
	if got := strings.Join(policiesUsed(scenario.Client{LBPolicy: "round_robin"}), ","); got != "round_robin" {
		t.Errorf("policiesUsed(round_robin) = %s", got)
	}
}

// TestSubstitute_ChannelStateStandsInForThePolicy verifies that a third
// party's run waits on the channel's state where a scenario waits on the
// root policy's, and the reference's run does not.
func TestSubstitute_ChannelStateStandsInForThePolicy(t *testing.T) {
	third := &driverClient{hello: driver.Hello{Impl: "grpc-js"}}
	if got := third.substitute("balancer-state"); got != "channel-state" {
		t.Errorf("third party: %s, want channel-state", got)
	}
	if got := third.substitute("rpc-result"); got != "rpc-result" {
		t.Errorf("third party, rpc-result: %s", got)
	}
	ref := &driverClient{hello: driver.Hello{Impl: driver.Reference}}
	if got := ref.substitute("balancer-state"); got != "balancer-state" {
		t.Errorf("reference: %s, want balancer-state", got)
	}
	linked := &inProcess{}
	if got := linked.substitute("balancer-state"); got != "channel-state" {
		t.Errorf("linked grpc-go: %s, want channel-state", got)
	}
	if got := (&inProcess{recorded: true}).substitute("balancer-state"); got != "balancer-state" {
		t.Errorf("in-process reference: %s, want balancer-state", got)
	}
}

// TestNeeds_SessionMetadata verifies that a scenario whose RPCs carry
// conform's stand-in for the stateful-session filter needs a driver that
// understands it.
func TestNeeds_SessionMetadata(t *testing.T) {
	s := scenario.New("session").Backend("b1", scenario.IPv4Only).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(0, scenario.RPC("r1", scenario.Metadata("x-conform-session", "abc"))).
		End(time.Second).MustBuild()
	if got := strings.Join(needs(s), ","); !strings.Contains(got, driver.CanSessionMetadata) {
		t.Errorf("needs = %s, want %s among them", got, driver.CanSessionMetadata)
	}
}

// TestNeeds_XDS verifies an xds scenario needs xds (and no service config).
func TestNeeds_XDS(t *testing.T) {
	if got := needs(xdsRoundRobin()); !slices.Equal(got, []string{driver.CanWaitForReady, driver.CanXDS}) {
		t.Errorf("needs = %v, want [wait_for_ready xds]", got)
	}
}

// TestNeeds_RequestHashHeader verifies that a ring_hash config naming a
// request hash header (A76) needs a driver whose client takes it: without
// it every request would get a random hash.
func TestNeeds_RequestHashHeader(t *testing.T) {
	for cfg, want := range map[string]bool{`{"requestHashHeader":"x-key"}`: true, `{"minRingSize":16}`: false} {
		s := scenario.New("h").Backend("b1", scenario.IPv4Only).LB("ring_hash_experimental", cfg).End(time.Second).MustBuild()
		if got := slices.Contains(needs(s), driver.CanRequestHashHeader); got != want {
			t.Errorf("%s: needs %s = %v, want %v", cfg, driver.CanRequestHashHeader, got, want)
		}
		if got := missingCapabilities(s, driver.Hello{Can: map[string]bool{driver.CanServiceConfig: true}}); strings.Contains(got, "gRFC A76") != want {
			t.Errorf("%s: missing %q", cfg, got)
		}
	}
}

// TestNeeds_IdleTimeoutAndDNSTarget verifies that a client idle timeout
// needs a driver that takes one, and that a dns target's resolve step, the
// lab DNS's records, needs nothing of the driver's resolver: no endpoints,
// no mixed families (the driver is sent no resolve command).
func TestNeeds_IdleTimeoutAndDNSTarget(t *testing.T) {
	s := scenario.New("n").Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).
		Target(scenario.TargetDNS).LB("round_robin", `{}`).IdleTimeout(time.Second).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"), scenario.EP("b2/ipv4"))).
		End(time.Second).MustBuild()
	if got, want := strings.Join(needs(s), ","), "service_config,idle_timeout"; got != want {
		t.Errorf("needs = %s, want %s", got, want)
	}
	h := driver.Hello{Can: map[string]bool{driver.CanServiceConfig: true}}
	if got := missingCapabilities(s, h); !strings.Contains(got, driver.CanIdleTimeout) {
		t.Errorf("a driver without idle_timeout misses %q, want it named", got)
	}
}

// TestNeeds_ShuffleOfGroupedEndpointsNeedsEndpoints verifies that a
// scenario giving a shuffling pick_first endpoints of several addresses
// cannot run on a driver without endpoints: the flattened list it would
// send makes the client shuffle addresses one by one, which A61 forbids of
// it only because the driver hid the grouping (grpc-js 1.9 "failed"
// A61-ADDR-SHUFFLE-ENDPOINTS-ONLY so). A client that does not shuffle
// still runs it from the flattened list, which is the same scenario for
// it; so does a shuffling one given single-address endpoints.
func TestNeeds_ShuffleOfGroupedEndpointsNeedsEndpoints(t *testing.T) {
	s := heDroppedIPv6()                                        // b1: one endpoint of two addresses
	s.Client.LBConfig = "{\n\t\"shuffleAddressList\":\ttrue\n}" // any JSON layout
	base := map[string]bool{driver.CanMixedFamilies: true, driver.CanServiceConfig: true, driver.CanWaitForReady: true}
	with := func(extra ...string) driver.Hello {
		can := maps.Clone(base)
		for _, c := range extra {
			can[c] = true
		}
		return driver.Hello{Can: can}
	}
	if got := missingCapabilities(s, with(driver.CanShuffle)); !strings.Contains(got, "endpoints of several addresses under shuffleAddressList") {
		t.Errorf("a shuffling driver without endpoints misses %q, want the grouped endpoints named", got)
	}
	for name, h := range map[string]driver.Hello{"no shuffle": with(), "shuffle and endpoints": with(driver.CanShuffle, driver.CanEndpoints)} {
		if got := missingCapabilities(s, h); got != "" {
			t.Errorf("%s: misses %q, want nothing", name, got)
		}
	}
	flat := flatIPv6First(0)
	flat.Client.LBConfig = `{"shuffleAddressList": true}`
	if got := missingCapabilities(flat, with(driver.CanShuffle)); got != "" {
		t.Errorf("single-address endpoints: misses %q, want nothing", got)
	}
}
