package outlierdetection

import (
	"strings"
	"testing"
	"time"

	_ "github.com/conformlab/conform/reference/roundrobin" // a child policy
)

const child = `"childPolicy": [{"no_such_policy": {}}, {"conform_round_robin": {}}]`

// TestConfig_A50Defaults verifies A50, LB Policy Config: unset fields take
// A50's defaults, an algorithm's object alone turns it on with its
// defaults, and the first registered child policy is used.
func TestConfig_A50Defaults(t *testing.T) {
	c, err := parseConfig([]byte(`{"successRateEjection": {}, "failurePercentageEjection": {}, ` + child + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.interval != 10*time.Second || c.baseEjectionTime != 30*time.Second || c.maxEjectionTime != 300*time.Second || c.maxEjectionPercent != 10 {
		t.Errorf("defaults = %v %v %v %d", c.interval, c.baseEjectionTime, c.maxEjectionTime, c.maxEjectionPercent)
	}
	if *c.successRate != (successRateEjection{1900, 100, 5, 100}) || *c.failurePercentage != (failurePercentageEjection{85, 100, 5, 50}) {
		t.Errorf("algorithm defaults = %+v %+v", *c.successRate, *c.failurePercentage)
	}
	if c.childPolicy != "conform_round_robin" {
		t.Errorf("child = %q", c.childPolicy)
	}
	c, err = parseConfig([]byte(`{"interval": "0.5s", "baseEjectionTime": "1s", "maxEjectionTime": "2.25s", "maxEjectionPercent": 40, ` + child + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.interval != 500*time.Millisecond || c.baseEjectionTime != time.Second || c.maxEjectionTime != 2250*time.Millisecond || c.maxEjectionPercent != 40 || !c.noop() {
		t.Errorf("parsed = %+v", c)
	}
}

// TestConfig_A50Validation verifies A50, Validation: negative durations and
// percentages over 100 are parse errors.
func TestConfig_A50Validation(t *testing.T) {
	for js, want := range map[string]string{
		`{"interval": "-1s", ` + child + `}`:                                           "negative",
		`{"baseEjectionTime": "10", ` + child + `}`:                                    "google.protobuf.Duration",
		`{"interval": "0s", ` + child + `}`:                                            "interval must be positive",
		`{"maxEjectionPercent": 101, ` + child + `}`:                                   "maxEjectionPercent",
		`{"successRateEjection": {"enforcementPercentage": 101}, ` + child + `}`:       "successRateEjection.enforcementPercentage",
		`{"failurePercentageEjection": {"threshold": 101}, ` + child + `}`:             "failurePercentageEjection.threshold",
		`{"failurePercentageEjection": {"enforcementPercentage": 101}, ` + child + `}`: "failurePercentageEjection.enforcementPercentage",
		`{"childPolicy": [{"no_such_policy": {}}]}`:                                    "no registered policy",
	} {
		if _, err := parseConfig([]byte(js)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseConfig(%s) = %v, want an error containing %q", js, err, want)
		}
	}
}
