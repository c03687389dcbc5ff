// Package xds is the xDS sub-language of scenarios: the resources a
// scenario's xds step (scenario.SetXDS) has the lab's management server
// serve — listeners, route configurations, clusters and load assignments —
// a compact model of the resources gRPC reads (gRFCs A27, A37, A50, A52,
// A61, A62, A75), with its YAML form (Decode, Encode) and its checks
// (Resources.Validate). harness/xdsres turns it into Envoy protos.
//
// Addresses are symbolic, like every address of a scenario (scenario.Addr,
// "b1/ipv6"). Problems are *scenario.Error values naming the field by its
// path in the YAML form. The package does not import harness/scenario:
// scenario reads, writes and checks its xds steps through this one.
package xds

import (
	"time"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// Resources is the xDS management server's state of the world from an xds
// step on: every listener, route configuration, cluster and load
// assignment it serves, replacing the previous step's (a type whose
// resources did not change keeps its version, so clients get no response
// for it).
type Resources struct {
	// Version is the version the server gives changed types; empty: the
	// runner numbers xds steps "1", "2", … in timeline order.
	Version      string
	Listeners    []Listener
	RouteConfigs []RouteConfig
	Clusters     []Cluster
	Endpoints    []LoadAssignment
}

// Listener is an API listener whose HTTP connection manager takes its
// routes from RouteConfig over ADS (RDS), with the router filter.
type Listener struct {
	Name        string // the scenario's client.listener names one
	RouteConfig string // a route configuration's name
}

// RouteConfig has one virtual host for every domain ("*") with one
// route: every path ("/" prefix) to Cluster.
type RouteConfig struct {
	Name    string
	Cluster string
	// HashHeader, when set, is the route's hash_policy: one header policy
	// hashing this request header (A42, Hash Policy; for ring_hash). A
	// lower-case gRPC metadata key that carries text (not "-bin").
	HashHeader string
}

// ClusterType is a cluster's discovery type.
type ClusterType string

// The cluster types gRPC supports (A37 for the last two).
const (
	ClusterEDS        ClusterType = "EDS"
	ClusterLogicalDNS ClusterType = "LOGICAL_DNS"
	ClusterAggregate  ClusterType = "AGGREGATE"
)

// The LB policies a cluster may name.
const (
	RoundRobin = "round_robin" // lb_policy ROUND_ROBIN (the default)
	RingHash   = "ring_hash"   // lb_policy RING_HASH, ring_hash_lb_config
	PickFirst  = "pick_first"  // load_balancing_policy (A52) with envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst (A62)
)

// Cluster is one CDS resource.
type Cluster struct {
	Name string
	Type ClusterType
	// Clusters is an AGGREGATE cluster's ordered list of clusters (A37).
	// Empty makes a resource gRPC rejects.
	Clusters []string
	// DNSHost and DNSPort are a LOGICAL_DNS cluster's address; port 0 means
	// the backends' port.
	DNSHost string
	DNSPort int
	// LBPolicy is RoundRobin (when empty), RingHash or PickFirst.
	LBPolicy string
	// Shuffle is pick_first's shuffle_address_list (A62).
	Shuffle bool
	// MinRingSize and MaxRingSize are ring_hash's; zero leaves them unset.
	MinRingSize, MaxRingSize uint64
	// OutlierDetection, when set, is the cluster's outlier_detection (A50).
	OutlierDetection *OutlierDetection
	// UpstreamConfig, when set, is the cluster's upstream_config (A75).
	UpstreamConfig *UpstreamConfig
}

// OutlierDetection is a cluster's outlier_detection, the fields gRPC
// reads (A50). Zero leaves a field unset (the proto's default applies).
type OutlierDetection struct {
	Interval           time.Duration
	BaseEjectionTime   time.Duration
	MaxEjectionTime    time.Duration
	MaxEjectionPercent uint32
	// SuccessRate, when set, enables success rate ejection
	// (enforcing_success_rate); when nil it is disabled (0).
	SuccessRate *SuccessRate
	// FailurePercentage, when set, enables failure percentage ejection
	// (enforcing_failure_percentage); when nil it is disabled (0).
	FailurePercentage *FailurePercentage
}

// SuccessRate is success rate ejection's part of outlier_detection.
// Enforcement (1-100) is required; zero leaves another field unset.
type SuccessRate struct {
	StdevFactor   uint32 // success_rate_stdev_factor (1000ths)
	Enforcement   uint32 // enforcing_success_rate
	MinimumHosts  uint32 // success_rate_minimum_hosts
	RequestVolume uint32 // success_rate_request_volume
}

// FailurePercentage is failure percentage ejection's part.
// Enforcement (1-100) is required; zero leaves another field unset.
type FailurePercentage struct {
	Threshold     uint32 // failure_percentage_threshold
	Enforcement   uint32 // enforcing_failure_percentage
	MinimumHosts  uint32 // failure_percentage_minimum_hosts
	RequestVolume uint32 // failure_percentage_request_volume
}

// UpstreamConfig is a cluster's upstream_config: exactly one of
// HTTPProtocolOptions and TypeURL. A75 reads idle_timeout from it and
// NACKs anything but HttpProtocolOptions, and an idle_timeout out of
// google.protobuf.Duration's range; every such case can be written.
type UpstreamConfig struct {
	// HTTPProtocolOptions: an
	// envoy.extensions.upstreams.http.v3.HttpProtocolOptions.
	HTTPProtocolOptions *HTTPProtocolOptions
	// TypeURL: an Any of this other type URL, with an empty value.
	TypeURL string
}

// HTTPProtocolOptions is the part of HttpProtocolOptions A75 reads.
type HTTPProtocolOptions struct {
	// Common sets common_http_protocol_options (without idle_timeout
	// unless IdleTimeout is set, which implies it).
	Common bool
	// IdleTimeout is common_http_protocol_options.idle_timeout as sent:
	// out-of-range values are kept, for the NACK cases.
	IdleTimeout *Duration
}

// Duration is a google.protobuf.Duration, field by field.
type Duration struct {
	Seconds int64
	Nanos   int32
}

// LoadAssignment is one EDS resource (a ClusterLoadAssignment), for the
// EDS cluster of the same name.
type LoadAssignment struct {
	Cluster string
	// Priorities: index 0 is priority 0 (A56: the highest).
	Priorities []Priority
}

// Priority is the localities of one priority.
type Priority struct {
	Localities []Locality
}

// Locality is one locality of a priority.
type Locality struct {
	Name      string // the locality's sub_zone (region and zone are empty)
	Weight    uint32 // load_balancing_weight; zero leaves it unset
	Endpoints []Endpoint
}

// The health statuses an endpoint may carry (envoy.config.core.v3.HealthStatus).
const (
	HealthUnknown   = "UNKNOWN"
	HealthHealthy   = "HEALTHY"
	HealthUnhealthy = "UNHEALTHY"
	HealthDraining  = "DRAINING"
	HealthTimeout   = "TIMEOUT"
	HealthDegraded  = "DEGRADED"
)

// Endpoint is one endpoint: an address and its additional addresses
// (A61), symbolic like every address of a scenario (scenario.Addr).
type Endpoint struct {
	Addr            form.Addr
	AdditionalAddrs []form.Addr
	// InvalidAdditionalAddrs are further additional_addresses entries, sent
	// after AdditionalAddrs, each of a form gRPC must reject (one of the
	// InvalidAddr… constants): A61's NACK cases.
	InvalidAdditionalAddrs []string
	Health                 string // one of the Health… constants; empty leaves it unset (UNKNOWN)
	Weight                 uint32 // load_balancing_weight; zero leaves it unset
}

// The invalid forms an additional_addresses entry may take. A61 (Support
// Multiple Addresses Per Endpoint in xDS) rejects an entry without an
// address and validates the address of one exactly like Endpoint.address,
// whose rules are A27's (ClusterLoadAssignment Proto): a socket_address
// holding an IPv4 or IPv6 address and a port_value. The forms with a host
// or a port take the endpoint's own (its Addr's).
const (
	InvalidAddrUnset       = "unset"             // the entry's address is unset
	InvalidAddrNoSocket    = "no_socket_address" // an Address holding a pipe, not a socket_address
	InvalidAddrNotIP       = "not_ip"            // socket_address.address is a host name, "<backend>.invalid"
	InvalidAddrNoPortValue = "no_port_value"     // a named_port ("grpc") instead of port_value
	InvalidAddrPortRange   = "port_out_of_range" // port_value 65536
)

// InvalidAddrForms lists the invalid additional address forms.
func InvalidAddrForms() []string {
	return []string{InvalidAddrUnset, InvalidAddrNoSocket, InvalidAddrNotIP, InvalidAddrNoPortValue, InvalidAddrPortRange}
}

// HealthStatuses lists the endpoint health statuses.
func HealthStatuses() []string {
	return []string{HealthUnknown, HealthHealthy, HealthUnhealthy, HealthDraining, HealthTimeout, HealthDegraded}
}
