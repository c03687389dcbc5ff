package pickfirst

import (
	"strings"
	"testing"
	"time"
)

// TestPickFirst_Config_DelayDefaultAndClamp verifies A61, Happy Eyeballs in
// the pick_first LB Policy: 250 ms by default, values clamped to 100 ms..2 s.
func TestPickFirst_Config_DelayDefaultAndClamp(t *testing.T) {
	for _, tc := range []struct {
		js   string
		want time.Duration
	}{
		{``, 250 * time.Millisecond},
		{`{}`, 250 * time.Millisecond},
		{`{"shuffleAddressList": true}`, 250 * time.Millisecond},
		{`{"connectionAttemptDelay": "300ms"}`, 300 * time.Millisecond},
		{`{"connectionAttemptDelay": "0.5s"}`, 500 * time.Millisecond},
		{`{"connectionAttemptDelay": "10ms"}`, 100 * time.Millisecond},
		{`{"connectionAttemptDelay": "0s"}`, 100 * time.Millisecond},
		{`{"connectionAttemptDelay": "5s"}`, 2 * time.Second},
	} {
		cfg, err := parseConfig([]byte(tc.js))
		if err != nil {
			t.Fatalf("parseConfig(%s): %v", tc.js, err)
		}
		if cfg.connectionAttemptDelay != tc.want {
			t.Errorf("parseConfig(%s): delay %v, want %v", tc.js, cfg.connectionAttemptDelay, tc.want)
		}
	}
}

// TestPickFirst_Config_RejectsBadJSON verifies that malformed configs are
// refused with the field named (A62, Enable random shuffling of address list:
// shuffleAddressList is a boolean).
func TestPickFirst_Config_RejectsBadJSON(t *testing.T) {
	for js, want := range map[string]string{
		`{`:                                  "invalid LB config",
		`{"shuffleAddressList": "yes"}`:      "shuffleAddressList",
		`{"connectionAttemptDelay": 250}`:    "connectionAttemptDelay",
		`{"connectionAttemptDelay": "soon"}`: "connectionAttemptDelay",
		`{"connectionAttemptDelay": "-1s"}`:  "negative",
	} {
		_, err := builder{}.ParseConfig([]byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%s) = %v, want an error mentioning %q", js, err, want)
		}
	}
	cfg, err := builder{}.ParseConfig([]byte(`{"shuffleAddressList": true, "future": 1}`))
	if err != nil || !cfg.(*lbConfig).shuffleAddressList {
		t.Fatalf("ParseConfig with an unknown field = %v, %v; want shuffle on, no error", cfg, err)
	}
}
