package ringhash

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/grpc/serviceconfig"
)

// Ring size limits of A42, ring_hash_experimental LB policy, LB Policy
// Config.
const (
	defaultMinRingSize = 1024
	defaultMaxRingSize = 4096
	// maxRingSizeLimit: values above 8M are rejected (NACKed).
	maxRingSizeLimit = 8 * 1024 * 1024
	// ringSizeCap is the client-side cap: configured sizes above it are
	// treated as the cap. A42 wants it locally configurable with a default
	// of 4096; conform keeps the default.
	ringSizeCap = 4096
)

// lbConfig is ring_hash's configuration after validation: sizes are within
// [1, ringSizeCap] with minRingSize <= maxRingSize, and requestHashHeader is
// a lower-case metadata key or empty.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`

	MinRingSize uint64 `json:"minRingSize,omitempty"`
	MaxRingSize uint64 `json:"maxRingSize,omitempty"`
	// RequestHashHeader names the request header whose values, joined with
	// ",", are hashed with XXH64 to give the request's hash; conform's
	// non-xDS stand-in for A42's hash policies (A42, Hash Policy: header).
	// Empty, or absent from a request: the request gets a random hash.
	RequestHashHeader string `json:"requestHashHeader,omitempty"`
}

func defaultConfig() *lbConfig {
	return &lbConfig{MinRingSize: defaultMinRingSize, MaxRingSize: defaultMaxRingSize}
}

// parseConfig validates a JSON config. Unknown fields are ignored, as in
// the rest of the service config. A size of 0 or an absent size takes its
// default (proto3: zero is unset).
func parseConfig(js json.RawMessage) (*lbConfig, error) {
	cfg := &lbConfig{}
	if len(js) != 0 {
		if err := json.Unmarshal(js, cfg); err != nil {
			return nil, fmt.Errorf("%s: invalid LB config %s: %v", Name, js, err)
		}
	}
	// A42, LB Policy Config: sizes above 8M are rejected; min must not
	// exceed max (as configured, before the cap applies).
	if cfg.MinRingSize > maxRingSizeLimit {
		return nil, fmt.Errorf("%s: minRingSize %d is above the limit %d", Name, cfg.MinRingSize, maxRingSizeLimit)
	}
	if cfg.MaxRingSize > maxRingSizeLimit {
		return nil, fmt.Errorf("%s: maxRingSize %d is above the limit %d", Name, cfg.MaxRingSize, maxRingSizeLimit)
	}
	if cfg.MinRingSize == 0 {
		cfg.MinRingSize = defaultMinRingSize
	}
	if cfg.MaxRingSize == 0 {
		cfg.MaxRingSize = defaultMaxRingSize
	}
	if cfg.MinRingSize > cfg.MaxRingSize {
		return nil, fmt.Errorf("%s: minRingSize %d is greater than maxRingSize %d", Name, cfg.MinRingSize, cfg.MaxRingSize)
	}
	// A42, LB Policy Config: a size above the client-side cap is treated as
	// the cap.
	cfg.MinRingSize = min(cfg.MinRingSize, ringSizeCap)
	cfg.MaxRingSize = min(cfg.MaxRingSize, ringSizeCap)

	if h := cfg.RequestHashHeader; h != "" {
		h = strings.ToLower(h)
		if err := validateHeaderName(h); err != nil {
			return nil, fmt.Errorf("%s: invalid requestHashHeader %q: %v", Name, cfg.RequestHashHeader, err)
		}
		cfg.RequestHashHeader = h
	}
	return cfg, nil
}

// validateHeaderName accepts a lower-case gRPC metadata key that carries
// text: A42, Hash Policy, matches headers as A28 does, which ignores binary
// ("-bin") headers, so hashing one could never produce a hash.
func validateHeaderName(h string) error {
	if strings.HasSuffix(h, "-bin") {
		return fmt.Errorf("binary headers are not hashed")
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return fmt.Errorf("%q is not allowed in a metadata key", r)
		}
	}
	return nil
}
