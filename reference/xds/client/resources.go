package client

import (
	"encoding/json"
	"time"
)

// Type URLs of the four resource types the client watches (A27, "xDS API
// Overview").
const (
	ListenerType    = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteConfigType = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	ClusterType     = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointsType   = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// DefaultIdleTimeout is A75's default for the CDS idle_timeout ("The
// idle_timeout defaults to 1 hour").
const DefaultIdleTimeout = time.Hour

// Listener is a validated LDS resource: the route configuration it names
// (RDS) or carries inline.
type Listener struct {
	Name            string
	RouteConfigName string       // set when the route configuration comes from RDS
	Inline          *RouteConfig // set when the HttpConnectionManager carries it
}

// RouteConfig is a validated RDS resource (or an inline one).
type RouteConfig struct {
	Name         string
	VirtualHosts []VirtualHost
}

// VirtualHost is one virtual host: its domains and its routes in order.
type VirtualHost struct {
	Name    string
	Domains []string
	Routes  []Route
}

// Route is a route the client understands: a prefix or path match and a
// cluster action. Routes with another action are kept with Cluster empty and
// Unsupported saying why, so that choosing one is a config error, not a NACK.
type Route struct {
	Prefix      *string
	Path        *string
	Cluster     string
	Unsupported string
	// HashHeader is the request header of the route's first header hash
	// policy (A42, Hash Policy), lower-cased; empty when it has none.
	HashHeader string
}

// ClusterKind says how a cluster finds its endpoints (A37, "XdsClient
// ClusterWatcher Changes").
type ClusterKind int

// The cluster kinds.
const (
	KindEDS ClusterKind = iota
	KindLogicalDNS
	KindAggregate
)

func (k ClusterKind) String() string {
	switch k {
	case KindEDS:
		return "EDS"
	case KindLogicalDNS:
		return "LOGICAL_DNS"
	case KindAggregate:
		return "AGGREGATE"
	}
	return "unknown"
}

// Cluster is a validated CDS resource.
type Cluster struct {
	Name string
	Kind ClusterKind
	// EDSServiceName is the EDS resource to watch for a KindEDS cluster:
	// eds_cluster_config.service_name, or the cluster's name when unset.
	EDSServiceName string
	// DNSHost and DNSPort are a KindLogicalDNS cluster's name to resolve
	// (A37, Validation).
	DNSHost string
	DNSPort uint32
	// Children are a KindAggregate cluster's underlying clusters, in order.
	Children []string
	// LBPolicy is the cluster's LB policy as one LoadBalancingConfig JSON
	// object naming a reference policy, for example
	// {"conform_round_robin":{}} (A52, "XdsClient").
	LBPolicy json.RawMessage
	// IdleTimeout is A75's idle_timeout, DefaultIdleTimeout when unset.
	IdleTimeout time.Duration
	// OutlierDetection is A50's outlier detection config (without
	// childPolicy) built from the cluster's outlier_detection, or nil when
	// the cluster has none.
	OutlierDetection json.RawMessage
	// OverrideHostStatus is A55's common_lb_config.override_host_status,
	// restricted to UNKNOWN, HEALTHY and DRAINING; [UNKNOWN, HEALTHY] when
	// unset.
	OverrideHostStatus []string
}

// HealthStatus is an endpoint's EDS health status, as named in
// envoy.config.core.v3.HealthStatus.
type HealthStatus string

// The EDS health statuses the client passes on (A27; DRAINING per A55).
const (
	HealthUnknown  HealthStatus = "UNKNOWN"
	HealthHealthy  HealthStatus = "HEALTHY"
	HealthDraining HealthStatus = "DRAINING"
)

// Endpoints is a validated EDS resource: its priorities in order (index 0 is
// the highest), each with its localities.
type Endpoints struct {
	Name       string
	Priorities []Priority
}

// Priority is the localities of one EDS priority.
type Priority struct {
	Localities []Locality
}

// Locality is one locality of a priority: its identity, weight and
// endpoints.
type Locality struct {
	ID        LocalityID
	Weight    uint32
	Endpoints []Endpoint
}

// LocalityID identifies a locality.
type LocalityID struct {
	Region  string `json:"region,omitempty"`
	Zone    string `json:"zone,omitempty"`
	SubZone string `json:"subZone,omitempty"`
}

// String is the locality's name in the policy tree: its JSON form, like
// {"region":"r1","zone":"z1"}; an empty locality is {}.
func (l LocalityID) String() string {
	b, _ := json.Marshal(l)
	return string(b)
}

// Endpoint is one EDS endpoint: its addresses ("host:port", the
// Endpoint.address first, then additional_addresses in order, A61), its
// health status and its weight (1 when unset).
type Endpoint struct {
	Addresses    []string
	HealthStatus HealthStatus
	Weight       uint32
}

// Config is a complete configuration for one listener: every resource the
// listener depends on has been received and validated.
type Config struct {
	Listener        string
	RouteConfigName string // empty when the route configuration is inline
	// Cluster is the cluster the listener's default route sends to.
	Cluster string
	// HashHeader is that route's hash policy header (Route.HashHeader):
	// every ring_hash in LBPolicies hashes it (as its requestHashHeader).
	HashHeader string
	// Leaves is A37's flattened list of the clusters underlying Cluster:
	// depth-first, each cluster once at its first position. For a cluster
	// that is not an aggregate it is [Cluster].
	Leaves []string
	// Clusters holds every cluster of the graph below Cluster, Cluster
	// included.
	Clusters map[string]*Cluster
	// Endpoints holds the EDS resource of every EDS leaf, keyed by its
	// EDSServiceName.
	Endpoints map[string]*Endpoints
	// LBPolicies is the LB policy each leaf uses: its own (A75), or, with
	// Options.AggregateClusterBackwardCompat and an aggregate Cluster, the
	// aggregate's.
	LBPolicies map[string]json.RawMessage
}

// Aggregate reports whether Cluster is an aggregate cluster.
func (c *Config) Aggregate() bool {
	return c.Clusters[c.Cluster].Kind == KindAggregate
}
