package overridehost

import (
	"encoding/base64"
	"fmt"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"

	_ "github.com/conformlab/conform/reference/roundrobin" // a child policy
)

const child = `"childPolicy": [{"conform_round_robin": {}}]`

// TestConfig_StatusesAndIdleTimeout verifies A55 (override_host_status
// defaults to [UNKNOWN, HEALTHY]; values other than UNKNOWN, HEALTHY and
// DRAINING are ignored) and A75 (idle_timeout, 1 h by default).
func TestConfig_StatusesAndIdleTimeout(t *testing.T) {
	for js, want := range map[string]string{
		`{` + child + `}`: "map[HEALTHY:true UNKNOWN:true] 1h0m0s",
		`{"overrideHostStatus": [], "idleTimeout": "30s", ` + child + `}`:                                    "map[HEALTHY:true UNKNOWN:true] 30s",
		`{"overrideHostStatus": ["DRAINING", "UNHEALTHY", "TIMEOUT"], "idleTimeout": "0.5s", ` + child + `}`: "map[DRAINING:true] 500ms",
	} {
		c, err := parseConfig([]byte(js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		if got := fmt.Sprint(c.statuses, " ", c.idleTimeout); got != want {
			t.Errorf("%s: %s, want %s", js, got, want)
		}
	}
	for _, js := range []string{`{"idleTimeout": "1h", ` + child + `}`, `{"idleTimeout": "-1s", ` + child + `}`, `{"childPolicy": []}`} {
		if _, err := parseConfig([]byte(js)); err == nil {
			t.Errorf("parseConfig(%s) accepted", js)
		}
	}
}

// TestSession_CookieAddressList verifies the stand-in for A60's cookie with
// A61's address lists: base64 of "<addresses>;<cluster>", addresses
// comma-separated; a header without a value is a session without a cookie,
// and a malformed cookie is ignored.
func TestSession_CookieAddressList(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		md   metadata.MD
		want string
	}{
		{metadata.MD{}, "false []"},
		{metadata.Pairs(SessionHeader, ""), "true []"},
		{metadata.Pairs(SessionHeader, EncodeCookie([]string{"198.18.0.1:443", "[fd00:c0f::1]:443"}, "cluster:c1")), "true [198.18.0.1:443 [fd00:c0f::1]:443]"},
		{metadata.Pairs(SessionHeader, b64("198.18.0.2:443")), "true [198.18.0.2:443]"},
		{metadata.Pairs(SessionHeader, b64("backend-1:443")), "true []"},
		{metadata.Pairs(SessionHeader, "not base64!"), "true []"},
	} {
		in, cookie := sessionOf(c.md)
		if got := fmt.Sprint(in, " ", cookie); got != c.want {
			t.Errorf("sessionOf(%v) = %s, want %s", c.md, got, c.want)
		}
	}
	if got := EncodeCookie([]string{"198.18.0.1:443"}, ""); got != b64("198.18.0.1:443") {
		t.Errorf("EncodeCookie = %s", got)
	}
}

// TestHealthStatus_RoundTrip verifies the helpers the xDS resolver uses to
// carry EDS health status: UNKNOWN when unset.
func TestHealthStatus_RoundTrip(t *testing.T) {
	e := resolver.Endpoint{Addresses: []resolver.Address{{Addr: "198.18.0.1:443"}}}
	if s := HealthStatus(e); s != StatusUnknown {
		t.Errorf("unset = %s", s)
	}
	if s := HealthStatus(SetHealthStatus(e, StatusDraining)); s != StatusDraining {
		t.Errorf("set = %s", s)
	}
}
