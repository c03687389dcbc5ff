package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	aggregateType           = "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"
	httpProtocolOptionsType = "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	// maxDurationSeconds is google.protobuf.Duration's range: about 10,000
	// years (A75, "Reading the idle_timeout field in CDS").
	maxDurationSeconds = 315576000000
)

// parseCluster validates a CDS resource: its discovery type (A37,
// Validation), its LB policy (A52, A62, A42), its idle_timeout (A75), its
// outlier detection (A50, xDS Validation) and override_host_status (A55).
func parseCluster(a *anypb.Any) (string, *Cluster, error) {
	c := &clusterv3.Cluster{}
	if err := a.UnmarshalTo(c); err != nil {
		return "", nil, fmt.Errorf("cannot unmarshal Cluster: %v", err)
	}
	name := c.GetName()
	out := &Cluster{Name: name}
	if err := discovery(c, out); err != nil {
		return name, nil, err
	}
	lb, err := convertLBPolicy(c)
	if err != nil {
		return name, nil, err
	}
	out.LBPolicy = lb
	if out.IdleTimeout, err = idleTimeout(c); err != nil {
		return name, nil, err
	}
	if out.OutlierDetection, err = outlierDetection(c.GetOutlierDetection()); err != nil {
		return name, nil, fmt.Errorf("outlier_detection: %v", err)
	}
	out.OverrideHostStatus = overrideHostStatus(c.GetCommonLbConfig().GetOverrideHostStatus())
	return name, out, nil
}

// discovery reads the cluster's kind (A37, Validation): type EDS or
// LOGICAL_DNS, or a cluster_type holding an aggregate ClusterConfig.
func discovery(c *clusterv3.Cluster, out *Cluster) error {
	if ct := c.GetClusterType(); ct != nil {
		tc := ct.GetTypedConfig()
		if tc == nil {
			return errors.New("cluster_type.typed_config is unset")
		}
		if tc.GetTypeUrl() != aggregateType {
			return fmt.Errorf("cluster_type.typed_config is %s, not an aggregate ClusterConfig", tc.GetTypeUrl())
		}
		agg := &aggregatev3.ClusterConfig{}
		if err := tc.UnmarshalTo(agg); err != nil {
			return fmt.Errorf("cannot unmarshal aggregate ClusterConfig: %v", err)
		}
		if len(agg.GetClusters()) == 0 {
			return errors.New("aggregate cluster has no clusters")
		}
		out.Kind = KindAggregate
		out.Children = agg.GetClusters()
		return nil
	}
	switch c.GetType() {
	case clusterv3.Cluster_EDS:
		cs := c.GetEdsClusterConfig().GetEdsConfig()
		if cs.GetAds() == nil && cs.GetSelf() == nil {
			return errors.New("eds_cluster_config.eds_config is neither ads nor self")
		}
		out.Kind = KindEDS
		out.EDSServiceName = c.GetEdsClusterConfig().GetServiceName()
		if out.EDSServiceName == "" {
			out.EDSServiceName = c.GetName()
		}
		return nil
	case clusterv3.Cluster_LOGICAL_DNS:
		la := c.GetLoadAssignment()
		if la == nil {
			return errors.New("LOGICAL_DNS cluster has no load_assignment")
		}
		if n := len(la.GetEndpoints()); n != 1 {
			return fmt.Errorf("LOGICAL_DNS load_assignment has %d endpoints, want exactly 1", n)
		}
		lbe := la.GetEndpoints()[0].GetLbEndpoints()
		if len(lbe) != 1 {
			return fmt.Errorf("LOGICAL_DNS load_assignment.endpoints[0] has %d lb_endpoints, want exactly 1", len(lbe))
		}
		sa := lbe[0].GetEndpoint().GetAddress().GetSocketAddress()
		if sa == nil {
			return errors.New("LOGICAL_DNS endpoint has no socket_address")
		}
		if sa.GetAddress() == "" {
			return errors.New("LOGICAL_DNS socket_address.address is empty")
		}
		pv, ok := sa.GetPortSpecifier().(*corev3.SocketAddress_PortValue)
		if !ok {
			return errors.New("LOGICAL_DNS socket_address.port_value is unset")
		}
		out.Kind = KindLogicalDNS
		out.DNSHost = sa.GetAddress()
		out.DNSPort = pv.PortValue
		return nil
	}
	return fmt.Errorf("cluster type %v is neither EDS nor LOGICAL_DNS, and cluster_type is unset", c.GetType())
}

// idleTimeout implements A75, "Reading the idle_timeout field in CDS".
func idleTimeout(c *clusterv3.Cluster) (time.Duration, error) {
	uc := c.GetUpstreamConfig()
	if uc == nil {
		return DefaultIdleTimeout, nil // upstream_config absent: the default.
	}
	tc := uc.GetTypedConfig()
	if tc.GetTypeUrl() != httpProtocolOptionsType {
		return 0, fmt.Errorf("upstream_config holds %q, not %s", tc.GetTypeUrl(), httpProtocolOptionsType)
	}
	hpo := &httpv3.HttpProtocolOptions{}
	if err := tc.UnmarshalTo(hpo); err != nil {
		return 0, fmt.Errorf("upstream_config: cannot unmarshal HttpProtocolOptions: %v", err)
	}
	common := hpo.GetCommonHttpProtocolOptions()
	if common == nil {
		return DefaultIdleTimeout, nil // common_http_protocol_options absent.
	}
	d := common.GetIdleTimeout()
	if d == nil {
		return DefaultIdleTimeout, nil // idle_timeout unset.
	}
	v, err := duration(d)
	if err != nil {
		return 0, fmt.Errorf("upstream_config: common_http_protocol_options.idle_timeout: %v", err)
	}
	return v, nil
}

// duration applies A75's checks of a google.protobuf.Duration: seconds in
// [0, 315576000000], nanos in [0, 999999999].
func duration(d *durationpb.Duration) (time.Duration, error) {
	if s := d.GetSeconds(); s < 0 || s > maxDurationSeconds {
		return 0, fmt.Errorf("seconds %d is outside [0, %d]", s, int64(maxDurationSeconds))
	}
	if n := d.GetNanos(); n < 0 || n > 999999999 {
		return 0, fmt.Errorf("nanos %d is outside [0, 999999999]", n)
	}
	// A valid duration above Go's ~292 years saturates.
	if d.GetSeconds() > int64((1<<63-1)/time.Second)-1 {
		return time.Duration(1<<63 - 1), nil
	}
	return time.Duration(d.GetSeconds())*time.Second + time.Duration(d.GetNanos()), nil
}

// outlierDetection maps CDS outlier_detection to A50's config (A50, xDS
// Integration), or returns nil when the cluster has none.
func outlierDetection(od *clusterv3.OutlierDetection) (json.RawMessage, error) {
	if od == nil {
		return nil, nil
	}
	m := map[string]any{}
	for _, f := range []struct {
		key string
		d   *durationpb.Duration
	}{{"interval", od.GetInterval()}, {"baseEjectionTime", od.GetBaseEjectionTime()}, {"maxEjectionTime", od.GetMaxEjectionTime()}} {
		if f.d == nil {
			continue
		}
		v, err := duration(f.d)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.key, err)
		}
		m[f.key] = DurationJSON(v)
	}
	percent := func(key string, v uint32) error {
		if v > 100 {
			return fmt.Errorf("%s %d is above 100", key, v)
		}
		return nil
	}
	if v := od.GetMaxEjectionPercent(); v != nil {
		if err := percent("max_ejection_percent", v.GetValue()); err != nil {
			return nil, err
		}
		m["maxEjectionPercent"] = v.GetValue()
	}
	// enforcing_success_rate set to 0 disables success-rate ejection; unset
	// means its default (100), so the algorithm is on.
	if e := od.GetEnforcingSuccessRate(); e == nil || e.GetValue() != 0 {
		sr := map[string]any{}
		if e != nil {
			if err := percent("enforcing_success_rate", e.GetValue()); err != nil {
				return nil, err
			}
			sr["enforcementPercentage"] = e.GetValue()
		}
		if v := od.GetSuccessRateStdevFactor(); v != nil {
			sr["stdevFactor"] = v.GetValue()
		}
		if v := od.GetSuccessRateMinimumHosts(); v != nil {
			sr["minimumHosts"] = v.GetValue()
		}
		if v := od.GetSuccessRateRequestVolume(); v != nil {
			sr["requestVolume"] = v.GetValue()
		}
		m["successRateEjection"] = sr
	}
	// enforcing_failure_percentage unset or 0 disables failure-percentage
	// ejection.
	if e := od.GetEnforcingFailurePercentage(); e != nil && e.GetValue() != 0 {
		if err := percent("enforcing_failure_percentage", e.GetValue()); err != nil {
			return nil, err
		}
		fp := map[string]any{"enforcementPercentage": e.GetValue()}
		if v := od.GetFailurePercentageThreshold(); v != nil {
			if err := percent("failure_percentage_threshold", v.GetValue()); err != nil {
				return nil, err
			}
			fp["threshold"] = v.GetValue()
		}
		if v := od.GetFailurePercentageMinimumHosts(); v != nil {
			fp["minimumHosts"] = v.GetValue()
		}
		if v := od.GetFailurePercentageRequestVolume(); v != nil {
			fp["requestVolume"] = v.GetValue()
		}
		m["failurePercentageEjection"] = fp
	}
	b, err := json.Marshal(m)
	return b, err
}

// DurationJSON is d in the proto3 JSON form of google.protobuf.Duration:
// "3600s", "0.5s", "1.000000001s".
func DurationJSON(d time.Duration) string {
	s, n := int64(d/time.Second), int64(d%time.Second)
	if n == 0 {
		return strconv.FormatInt(s, 10) + "s"
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", n), "0")
	return strconv.FormatInt(s, 10) + "." + frac + "s"
}

// overrideHostStatus keeps UNKNOWN, HEALTHY and DRAINING of the set, in
// that order (A55: other values are ignored); unset means [UNKNOWN, HEALTHY].
func overrideHostStatus(s *corev3.HealthStatusSet) []string {
	if s == nil {
		return []string{string(HealthUnknown), string(HealthHealthy)}
	}
	has := map[corev3.HealthStatus]bool{}
	for _, st := range s.GetStatuses() {
		has[st] = true
	}
	var out []string
	for _, st := range []corev3.HealthStatus{corev3.HealthStatus_UNKNOWN, corev3.HealthStatus_HEALTHY, corev3.HealthStatus_DRAINING} {
		if has[st] {
			out = append(out, st.String())
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}
