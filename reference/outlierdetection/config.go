package outlierdetection

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/reference/internal/childconfig"
)

// lbConfig is A50's OutlierDetectionLoadBalancingConfig, parsed, with A50's
// defaults filled in.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`

	interval           time.Duration
	baseEjectionTime   time.Duration
	maxEjectionTime    time.Duration
	maxEjectionPercent uint32
	// successRate and failurePercentage are nil when the algorithm is not
	// configured.
	successRate       *successRateEjection
	failurePercentage *failurePercentageEjection

	childPolicy string
	childConfig serviceconfig.LoadBalancingConfig
}

type successRateEjection struct {
	StdevFactor           uint32 `json:"stdevFactor"`
	EnforcementPercentage uint32 `json:"enforcementPercentage"`
	MinimumHosts          uint32 `json:"minimumHosts"`
	RequestVolume         uint32 `json:"requestVolume"`
}

type failurePercentageEjection struct {
	Threshold             uint32 `json:"threshold"`
	EnforcementPercentage uint32 `json:"enforcementPercentage"`
	MinimumHosts          uint32 `json:"minimumHosts"`
	RequestVolume         uint32 `json:"requestVolume"`
}

// noop reports whether neither algorithm is configured: then nothing is
// counted and no timer runs (A50, Outlier Detection Behavior).
func (c *lbConfig) noop() bool { return c.successRate == nil && c.failurePercentage == nil }

// jsonConfig is the JSON form of A50's config (proto3 JSON: lowerCamelCase
// names, durations as strings such as "10s" or "0.5s").
type jsonConfig struct {
	Interval                  *string                      `json:"interval"`
	BaseEjectionTime          *string                      `json:"baseEjectionTime"`
	MaxEjectionTime           *string                      `json:"maxEjectionTime"`
	MaxEjectionPercent        *uint32                      `json:"maxEjectionPercent"`
	SuccessRateEjection       *json.RawMessage             `json:"successRateEjection"`
	FailurePercentageEjection *json.RawMessage             `json:"failurePercentageEjection"`
	ChildPolicy               []map[string]json.RawMessage `json:"childPolicy"`
}

// parseConfig reads A50's JSON config. A50's defaults: interval 10 s, base
// ejection time 30 s, max ejection time 300 s, max ejection percent 10;
// success rate: stdev factor 1900, enforcement 100 %, 5 hosts, volume 100;
// failure percentage: threshold 85, enforcement 100 %, 5 hosts, volume 50.
// A50, Validation: durations must be non-negative and the percentages at
// most 100. conform also refuses an interval of 0, which would make the
// interval timer fire in a loop (Envoy requires interval > 0).
func parseConfig(js []byte) (*lbConfig, error) {
	var jc jsonConfig
	if err := json.Unmarshal(js, &jc); err != nil {
		return nil, fmt.Errorf("%s: invalid LB config %s: %v", Name, js, err)
	}
	cfg := &lbConfig{
		interval:           10 * time.Second,
		baseEjectionTime:   30 * time.Second,
		maxEjectionTime:    300 * time.Second,
		maxEjectionPercent: 10,
	}
	for _, d := range []struct {
		name string
		in   *string
		out  *time.Duration
	}{{"interval", jc.Interval, &cfg.interval}, {"baseEjectionTime", jc.BaseEjectionTime, &cfg.baseEjectionTime}, {"maxEjectionTime", jc.MaxEjectionTime, &cfg.maxEjectionTime}} {
		if d.in == nil {
			continue
		}
		v, err := parseDuration(*d.in)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid LB config: %s: %v", Name, d.name, err)
		}
		*d.out = v
	}
	if cfg.interval == 0 {
		return nil, fmt.Errorf("%s: invalid LB config: interval must be positive", Name)
	}
	if jc.MaxEjectionPercent != nil {
		cfg.maxEjectionPercent = *jc.MaxEjectionPercent
	}
	if jc.SuccessRateEjection != nil && string(*jc.SuccessRateEjection) != "null" {
		sr := &successRateEjection{StdevFactor: 1900, EnforcementPercentage: 100, MinimumHosts: 5, RequestVolume: 100}
		if err := json.Unmarshal(*jc.SuccessRateEjection, sr); err != nil {
			return nil, fmt.Errorf("%s: invalid LB config: successRateEjection: %v", Name, err)
		}
		cfg.successRate = sr
	}
	if jc.FailurePercentageEjection != nil && string(*jc.FailurePercentageEjection) != "null" {
		fp := &failurePercentageEjection{Threshold: 85, EnforcementPercentage: 100, MinimumHosts: 5, RequestVolume: 50}
		if err := json.Unmarshal(*jc.FailurePercentageEjection, fp); err != nil {
			return nil, fmt.Errorf("%s: invalid LB config: failurePercentageEjection: %v", Name, err)
		}
		cfg.failurePercentage = fp
	}
	switch {
	case cfg.maxEjectionPercent > 100:
		return nil, fmt.Errorf("%s: invalid LB config: maxEjectionPercent %d > 100", Name, cfg.maxEjectionPercent)
	case cfg.successRate != nil && cfg.successRate.EnforcementPercentage > 100:
		return nil, fmt.Errorf("%s: invalid LB config: successRateEjection.enforcementPercentage %d > 100", Name, cfg.successRate.EnforcementPercentage)
	case cfg.failurePercentage != nil && cfg.failurePercentage.Threshold > 100:
		return nil, fmt.Errorf("%s: invalid LB config: failurePercentageEjection.threshold %d > 100", Name, cfg.failurePercentage.Threshold)
	case cfg.failurePercentage != nil && cfg.failurePercentage.EnforcementPercentage > 100:
		return nil, fmt.Errorf("%s: invalid LB config: failurePercentageEjection.enforcementPercentage %d > 100", Name, cfg.failurePercentage.EnforcementPercentage)
	}
	var err error
	cfg.childPolicy, cfg.childConfig, err = childconfig.Parse("childPolicy", jc.ChildPolicy)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid LB config: %v", Name, err)
	}
	return cfg, nil
}

// protoDuration is google.protobuf.Duration's JSON form: seconds with up to
// nine fractional digits and an "s" suffix.
var protoDuration = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`)

// parseDuration reads a JSON google.protobuf.Duration; negative values are
// refused (A50, Validation).
func parseDuration(s string) (time.Duration, error) {
	if !protoDuration.MatchString(s) {
		return 0, fmt.Errorf("%q is not a google.protobuf.Duration (\"10s\", \"0.5s\")", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", s, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}
