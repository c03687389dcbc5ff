package xds

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// Validate checks x, the resources of the xds step at path p, and returns
// the first problem as a *scenario.Error naming the field by its path in
// the YAML form. addr checks a symbolic address at a field: whether its
// backend exists and has its family is the scenario's to say.
//
// References between resources (a listener's route configuration, a
// route's cluster, an aggregate's clusters, a load assignment's cluster)
// need not resolve: a missing resource is a case gRPC handles, and
// scenarios test it. What is checked is what would make the resources
// ambiguous or unrepresentable.
func (x Resources) Validate(p string, addr func(field string, a form.Addr) error) error {
	if strings.ContainsFunc(x.Version, unicode.IsSpace) {
		return form.FieldErr(p+".version", "%q: no spaces", x.Version)
	}
	names := map[string]bool{}
	for i, l := range x.Listeners {
		lp := fmt.Sprintf("%s.listeners[%d]", p, i)
		if err := uniqueName(lp+".name", l.Name, names); err != nil {
			return err
		}
		if err := CheckResourceName(lp+".route_config", l.RouteConfig); err != nil {
			return err
		}
	}
	names = map[string]bool{}
	for i, rc := range x.RouteConfigs {
		rp := fmt.Sprintf("%s.route_configs[%d]", p, i)
		if err := uniqueName(rp+".name", rc.Name, names); err != nil {
			return err
		}
		if err := CheckResourceName(rp+".cluster", rc.Cluster); err != nil {
			return err
		}
		if err := checkHashHeader(rp+".hash_header", rc.HashHeader); err != nil {
			return err
		}
	}
	names = map[string]bool{}
	for i, c := range x.Clusters {
		if err := validateCluster(fmt.Sprintf("%s.clusters[%d]", p, i), c, names); err != nil {
			return err
		}
	}
	names = map[string]bool{}
	for i, la := range x.Endpoints {
		if err := validateLoadAssignment(fmt.Sprintf("%s.endpoints[%d]", p, i), la, names, addr); err != nil {
			return err
		}
	}
	return nil
}

func validateCluster(p string, c Cluster, names map[string]bool) error {
	if err := uniqueName(p+".name", c.Name, names); err != nil {
		return err
	}
	switch c.Type {
	case ClusterEDS, ClusterLogicalDNS, ClusterAggregate:
	default:
		return form.FieldErr(p+".type", "unknown cluster type %q (want EDS, LOGICAL_DNS or AGGREGATE)", c.Type)
	}
	if c.Type != ClusterAggregate && len(c.Clusters) > 0 {
		return form.FieldErr(p+".clusters", "only an AGGREGATE cluster lists clusters")
	}
	for i, n := range c.Clusters {
		if err := CheckResourceName(fmt.Sprintf("%s.clusters[%d]", p, i), n); err != nil {
			return err
		}
	}
	if c.Type == ClusterLogicalDNS {
		if err := CheckResourceName(p+".dns_host", c.DNSHost); err != nil {
			return err
		}
	} else if c.DNSHost != "" || c.DNSPort != 0 {
		return form.FieldErr(p+".dns_host", "only a LOGICAL_DNS cluster has a DNS host and port")
	}
	if c.DNSPort < 0 || c.DNSPort > 65535 {
		return form.FieldErr(p+".dns_port", "%d is not a port", c.DNSPort)
	}
	switch c.LBPolicy {
	case "", RoundRobin, RingHash, PickFirst:
	default:
		return form.FieldErr(p+".lb_policy", "unknown policy %q (want round_robin, ring_hash or pick_first)", c.LBPolicy)
	}
	if c.Shuffle && c.LBPolicy != PickFirst {
		return form.FieldErr(p+".shuffle", "only pick_first shuffles")
	}
	if (c.MinRingSize != 0 || c.MaxRingSize != 0) && c.LBPolicy != RingHash {
		return form.FieldErr(p+".min_ring_size", "ring sizes are ring_hash's")
	}
	if c.MinRingSize != 0 && c.MaxRingSize != 0 && c.MinRingSize > c.MaxRingSize {
		return form.FieldErr(p+".max_ring_size", "%d is below min_ring_size %d", c.MaxRingSize, c.MinRingSize)
	}
	if od := c.OutlierDetection; od != nil {
		if err := validateOutlierDetection(p+".outlier_detection", *od); err != nil {
			return err
		}
	}
	if uc := c.UpstreamConfig; uc != nil {
		return validateUpstreamConfig(p+".upstream_config", *uc)
	}
	return nil
}

func validateOutlierDetection(op string, od OutlierDetection) error {
	for _, d := range []struct {
		key string
		v   int64
	}{{"interval", int64(od.Interval)}, {"base_ejection_time", int64(od.BaseEjectionTime)}, {"max_ejection_time", int64(od.MaxEjectionTime)}} {
		if d.v < 0 {
			return form.FieldErr(op+"."+d.key, "negative duration")
		}
	}
	if od.MaxEjectionPercent > 100 {
		return form.FieldErr(op+".max_ejection_percent", "%d is over 100", od.MaxEjectionPercent)
	}
	if sr := od.SuccessRate; sr != nil && (sr.Enforcement < 1 || sr.Enforcement > 100) {
		return form.FieldErr(op+".success_rate.enforcement", "must be 1 to 100 (leave success_rate out to disable it)")
	}
	if fp := od.FailurePercentage; fp != nil {
		if fp.Enforcement < 1 || fp.Enforcement > 100 {
			return form.FieldErr(op+".failure_percentage.enforcement", "must be 1 to 100 (leave failure_percentage out to disable it)")
		}
		if fp.Threshold > 100 {
			return form.FieldErr(op+".failure_percentage.threshold", "%d is over 100", fp.Threshold)
		}
	}
	return nil
}

func validateUpstreamConfig(up string, uc UpstreamConfig) error {
	if (uc.HTTPProtocolOptions == nil) == (uc.TypeURL == "") {
		return form.FieldErr(up, "needs exactly one of http_protocol_options and type_url")
	}
	if uc.TypeURL != "" && (strings.ContainsFunc(uc.TypeURL, unicode.IsSpace) || !strings.Contains(uc.TypeURL, "/")) {
		return form.FieldErr(up+".type_url", "%q is not a type URL (type.googleapis.com/package.Message)", uc.TypeURL)
	}
	// idle_timeout's seconds and nanos are not checked: out-of-range
	// values are A75's NACK cases.
	return nil
}

func validateLoadAssignment(p string, la LoadAssignment, names map[string]bool, addr func(string, form.Addr) error) error {
	if err := uniqueName(p+".cluster", la.Cluster, names); err != nil {
		return err
	}
	for i, pr := range la.Priorities {
		pp := fmt.Sprintf("%s.priorities[%d]", p, i)
		localities := map[string]bool{}
		for j, l := range pr.Localities {
			lp := fmt.Sprintf("%s.localities[%d]", pp, j)
			if localities[l.Name] {
				return form.FieldErr(lp+".name", "locality %q is given twice in this priority", l.Name)
			}
			localities[l.Name] = true
			for k, e := range l.Endpoints {
				if err := validateEndpoint(fmt.Sprintf("%s.endpoints[%d]", lp, k), e, addr); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// validateEndpoint checks an endpoint's addresses (symbolic ones with addr;
// invalid ones must name a known form) and its health status.
func validateEndpoint(p string, e Endpoint, addr func(string, form.Addr) error) error {
	if err := addr(p+".addr", e.Addr); err != nil {
		return err
	}
	for m, a := range e.AdditionalAddrs {
		if err := addr(fmt.Sprintf("%s.additional_addresses[%d]", p, m), a); err != nil {
			return err
		}
	}
	for m, f := range e.InvalidAdditionalAddrs {
		if !slices.Contains(InvalidAddrForms(), f) {
			return form.FieldErr(fmt.Sprintf("%s.invalid_additional_addresses[%d]", p, m),
				"unknown form %q (want one of %s)", f, strings.Join(InvalidAddrForms(), ", "))
		}
	}
	if e.Health != "" && !slices.Contains(HealthStatuses(), e.Health) {
		return form.FieldErr(p+".health", "unknown health status %q (want one of %s)", e.Health, strings.Join(HealthStatuses(), ", "))
	}
	return nil
}

// uniqueName checks a resource's name and that no other resource of its
// type has it.
func uniqueName(field, name string, seen map[string]bool) error {
	if err := CheckResourceName(field, name); err != nil {
		return err
	}
	if seen[name] {
		return form.FieldErr(field, "%q is given twice", name)
	}
	seen[name] = true
	return nil
}

// CheckResourceName accepts a non-empty resource name (or DNS host) without
// spaces or control characters (xDS names may hold '/', ':' and '.', as
// xdstp:// names do); a problem names field.
func CheckResourceName(field, name string) error {
	if name == "" {
		return form.FieldErr(field, "must not be empty")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return form.FieldErr(field, "%q: no spaces or control characters", name)
	}
	return nil
}

// checkHashHeader accepts "" or a lower-case gRPC metadata key that carries
// text: A42 (Hash Policy) hashes headers as A28 matches them, which skips
// binary ("-bin") headers, so a policy on one would never give a hash.
func checkHashHeader(p, h string) error {
	if h == "" {
		return nil
	}
	if strings.HasSuffix(h, "-bin") {
		return form.FieldErr(p, "%q is a binary header, which hash policies skip (A42, Hash Policy)", h)
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return form.FieldErr(p, "%q is not a lower-case metadata key (%q)", h, c)
		}
	}
	return nil
}
