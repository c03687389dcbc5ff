package pickfirst

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/grpc/serviceconfig"
)

// The Connection Attempt Delay and its bounds. A61, Happy Eyeballs in the
// pick_first LB Policy: the default comes from RFC 8305 section 5 (250 ms);
// a configured value below 100 ms is treated as 100 ms and one above 2 s as
// 2 s.
const (
	defaultConnectionAttemptDelay = 250 * time.Millisecond
	minConnectionAttemptDelay     = 100 * time.Millisecond
	maxConnectionAttemptDelay     = 2 * time.Second
)

// lbConfig is the parsed configuration of one conform_pick_first instance.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`

	// shuffleAddressList is A62's knob: shuffle the endpoints of every
	// address list received, before flattening.
	shuffleAddressList bool
	// connectionAttemptDelay is already clamped to [100 ms, 2 s].
	connectionAttemptDelay time.Duration
}

// defaultConfig is what an instance uses when its parent passes no config.
func defaultConfig() *lbConfig {
	return &lbConfig{connectionAttemptDelay: defaultConnectionAttemptDelay}
}

// jsonConfig is the wire form. connectionAttemptDelay is conform's extension
// (A61 lets an implementation expose the delay as a channel argument); it is
// a Go duration string such as "250ms" or "0.3s". Unknown fields are ignored,
// as gRPC service configs are forward compatible.
type jsonConfig struct {
	ShuffleAddressList     *bool   `json:"shuffleAddressList"`
	ConnectionAttemptDelay *string `json:"connectionAttemptDelay"`
}

// parseConfig turns the JSON form into an lbConfig, reporting the field at
// fault when the JSON is malformed.
func parseConfig(js []byte) (*lbConfig, error) {
	cfg := defaultConfig()
	if len(js) == 0 {
		return cfg, nil
	}
	var jc jsonConfig
	if err := json.Unmarshal(js, &jc); err != nil {
		return nil, fmt.Errorf("%s: invalid LB config %s: %v", Name, js, err)
	}
	if jc.ShuffleAddressList != nil {
		cfg.shuffleAddressList = *jc.ShuffleAddressList
	}
	if jc.ConnectionAttemptDelay != nil {
		d, err := time.ParseDuration(*jc.ConnectionAttemptDelay)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid LB config: connectionAttemptDelay %q: %v", Name, *jc.ConnectionAttemptDelay, err)
		}
		if d < 0 {
			return nil, fmt.Errorf("%s: invalid LB config: connectionAttemptDelay %q is negative", Name, *jc.ConnectionAttemptDelay)
		}
		cfg.connectionAttemptDelay = clampDelay(d)
	}
	return cfg, nil
}

// clampDelay applies A61's bounds (Happy Eyeballs in the pick_first LB
// Policy: below 100 ms counts as 100 ms, above 2 s as 2 s).
func clampDelay(d time.Duration) time.Duration {
	return min(max(d, minConnectionAttemptDelay), maxConnectionAttemptDelay)
}
