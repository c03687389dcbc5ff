package protocol

import (
	"strings"
	"testing"
)

// TestParsePolicyMap_FormsAndErrors verifies the forms --policy accepts and
// that each bad one says what is wrong and what would be right.
func TestParsePolicyMap_FormsAndErrors(t *testing.T) {
	m, err := ParsePolicyMap("round_robin=acme_rr", "pick_first=acme_pick_first, ring_hash_experimental=acme_ring", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.String(), "pick_first=acme_pick_first,ring_hash_experimental=acme_ring,round_robin=acme_rr"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if again, err := ParsePolicyMap(m.String()); err != nil || again.String() != m.String() {
		t.Errorf("ParsePolicyMap(String()) = %v, %v; want the same mapping", again, err)
	}
	for arg, says := range map[string]string{
		"pick_first":                       "want STANDARD=YOURS, e.g. pick_first=acme_pick_first",
		"=acme":                            "want STANDARD=YOURS",
		"pick_first=":                      "want STANDARD=YOURS",
		"pickfirst=acme":                   "pickfirst is not a policy conform's scenarios use (they use pick_first, round_robin",
		"pick_first=acme one":              `"acme one" is not an LB policy name`,
		"pick_first=a,pick_first=b":        "pick_first is mapped already, onto a",
		"round_robin=x,,pick_first=acme_p": "want STANDARD=YOURS",
	} {
		if _, err := ParsePolicyMap(arg); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParsePolicyMap(%q) = %v, want an error saying %q", arg, err, says)
		}
	}
}

// TestPolicyMap_Rewrite verifies that the mapped policies are renamed at
// any depth and in the deprecated field, that a config naming no policy
// gets pick_first's target, and that what is not mapped stays as it is.
func TestPolicyMap_Rewrite(t *testing.T) {
	m := PolicyMap{"pick_first": "acme_pf"}
	for in, want := range map[string]string{
		``: `{"loadBalancingConfig":[{"acme_pf":{}}]}`,
		`{"healthCheckConfig":{"serviceName":""}}`:                             `{"healthCheckConfig":{"serviceName":""},"loadBalancingConfig":[{"acme_pf":{}}]}`,
		`{"loadBalancingConfig":[{"pick_first":{"shuffleAddressList":true}}]}`: `{"loadBalancingConfig":[{"acme_pf":{"shuffleAddressList":true}}]}`,
		`{"loadBalancingConfig":[{"round_robin":{}}]}`:                         `{"loadBalancingConfig":[{"round_robin":{}}]}`,
		`{"loadBalancingPolicy":"pick_first"}`:                                 `{"loadBalancingPolicy":"acme_pf"}`,
		`{"loadBalancingConfig":[{"priority_experimental":{"children":{"p0":{"config":[{"pick_first":{}}]}},"priorities":["p0"]}}]}`: `{"loadBalancingConfig":[{"priority_experimental":{"children":{"p0":{"config":[{"acme_pf":{}}]}},"priorities":["p0"]}}]}`,
		`{"loadBalancingConfig":[{"pick_first":{"connectionAttemptDelay":"0.030s","n":12345678901234567890}}]}`:                      `{"loadBalancingConfig":[{"acme_pf":{"connectionAttemptDelay":"0.030s","n":12345678901234567890}}]}`,
	} {
		got, err := m.Rewrite(in)
		if err != nil || got != want {
			t.Errorf("Rewrite(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if got, _ := (PolicyMap{}).Rewrite(""); got != "" {
		t.Errorf("an empty mapping rewrote the default config to %q", got)
	}
	if _, err := m.Rewrite("{"); err == nil {
		t.Error("a malformed service config was rewritten")
	}
}

// TestPolicyMap_Policies verifies what hello lists: a mapped policy when
// its target is registered, another when it is itself.
func TestPolicyMap_Policies(t *testing.T) {
	reg := map[string]bool{"acme_pf": true, "round_robin": true, "pick_first": true}
	got := PolicyMap{"pick_first": "acme_pf", "ring_hash_experimental": "acme_ring"}.Policies(func(n string) bool { return reg[n] })
	if strings.Join(got, ",") != "pick_first,round_robin" {
		t.Errorf("Policies = %v, want [pick_first round_robin]", got)
	}
}

// TestParseCan_OnlyAMappedPolicysCapabilities verifies what --can accepts:
// a capability of a policy the mapping maps, nothing else, each error
// saying what would be right; and that a mapped policy's capabilities are
// the declared ones, whatever grpc-go claimed for its own.
func TestParseCan_OnlyAMappedPolicysCapabilities(t *testing.T) {
	m := PolicyMap{"pick_first": "acme_pf"}
	got, err := ParseCan(m, "shuffle", "shuffle,connection_attempt_delay", "")
	if err != nil || strings.Join(got, ",") != "connection_attempt_delay,shuffle" {
		t.Errorf("ParseCan = %v, %v; want [connection_attempt_delay shuffle]", got, err)
	}
	for arg, says := range map[string]string{
		"frob":                "capability \"frob\": not one a balancer declares (connection_attempt_delay (pick_first), request_hash_header (ring_hash_experimental), shuffle (pick_first))",
		"request_hash_header": "is ring_hash_experimental's, which no mapping maps onto yours (map it: ring_hash_experimental=<your policy>)",
	} {
		if _, err := ParseCan(m, arg); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseCan(%q) = %v, want an error saying %q", arg, err, says)
		}
	}
	can := map[string]bool{"shuffle": true, "request_hash_header": true, "health_check": true}
	m.Capabilities(can, nil)
	if can["shuffle"] || !can["request_hash_header"] || !can["health_check"] {
		t.Errorf("capabilities %v: want shuffle (pick_first's, mapped, undeclared) off, the others as they were", can)
	}
	m.Capabilities(can, []string{"shuffle"})
	if !can["shuffle"] {
		t.Errorf("a declared shuffle is off: %v", can)
	}
}
