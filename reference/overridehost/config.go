package overridehost

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"google.golang.org/grpc/serviceconfig"

	"github.com/conformlab/conform/reference/internal/childconfig"
)

// defaultIdleTimeout is A75's default for CDS's idle_timeout (Reading the
// idle_timeout field in CDS).
const defaultIdleTimeout = time.Hour

// lbConfig is A55's OverrideHostLoadBalancingPolicyConfig with A75's
// idle_timeout, parsed.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`

	// statuses is override_host_status as a set of EDS health status
	// names; only UNKNOWN, HEALTHY and DRAINING are ever in it (A55:
	// other values are ignored).
	statuses    map[string]bool
	idleTimeout time.Duration

	childPolicy string
	childConfig serviceconfig.LoadBalancingConfig
}

type jsonConfig struct {
	OverrideHostStatus []string                     `json:"overrideHostStatus"`
	IdleTimeout        *string                      `json:"idleTimeout"`
	ChildPolicy        []map[string]json.RawMessage `json:"childPolicy"`
}

// parseConfig reads
//
//	{"overrideHostStatus": ["UNKNOWN", "HEALTHY"], "idleTimeout": "3600s",
//	 "childPolicy": [{...}]}
//
// An unset or empty overrideHostStatus is [UNKNOWN, HEALTHY] (A55, LB
// Policy for Stateful Session Affinity); values other than UNKNOWN, HEALTHY
// and DRAINING are ignored (A55, Load Balancer Configuration Containing
// override_host_status). idleTimeout is a google.protobuf.Duration in JSON
// form, 1 h when unset (A75).
func parseConfig(js []byte) (*lbConfig, error) {
	var jc jsonConfig
	if err := json.Unmarshal(js, &jc); err != nil {
		return nil, fmt.Errorf("%s: invalid LB config %s: %v", Name, js, err)
	}
	cfg := &lbConfig{statuses: make(map[string]bool), idleTimeout: defaultIdleTimeout}
	for _, s := range jc.OverrideHostStatus {
		switch s {
		case StatusUnknown, StatusHealthy, StatusDraining:
			cfg.statuses[s] = true
		}
	}
	if len(jc.OverrideHostStatus) == 0 {
		cfg.statuses[StatusUnknown], cfg.statuses[StatusHealthy] = true, true
	}
	if jc.IdleTimeout != nil {
		d, err := parseDuration(*jc.IdleTimeout)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid LB config: idleTimeout: %v", Name, err)
		}
		cfg.idleTimeout = d
	}
	var err error
	cfg.childPolicy, cfg.childConfig, err = childconfig.Parse("childPolicy", jc.ChildPolicy)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid LB config: %v", Name, err)
	}
	return cfg, nil
}

var protoDuration = regexp.MustCompile(`^[0-9]+(\.[0-9]{1,9})?s$`)

// parseDuration reads a non-negative JSON google.protobuf.Duration ("3600s",
// "0.5s").
func parseDuration(s string) (time.Duration, error) {
	if !protoDuration.MatchString(s) {
		return 0, fmt.Errorf("%q is not a non-negative google.protobuf.Duration (\"3600s\")", s)
	}
	return time.ParseDuration(s)
}
