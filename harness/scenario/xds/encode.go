package xds

import (
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// Encode is the YAML form of an xds step (see decode.go), in the order the
// reader documents; zero fields are left out. Decode reads it back as x.
func Encode(x Resources) *yaml.Node {
	m := &form.Mapping{}
	m.Str("version", x.Version)
	if len(x.Listeners) > 0 {
		seq := form.Seq()
		for _, l := range x.Listeners {
			lm := &form.Mapping{Flow: true}
			lm.Str("name", l.Name)
			lm.Str("route_config", l.RouteConfig)
			seq.Content = append(seq.Content, lm.Node())
		}
		m.Add("listeners", seq)
	}
	if len(x.RouteConfigs) > 0 {
		seq := form.Seq()
		for _, rc := range x.RouteConfigs {
			rm := &form.Mapping{Flow: true}
			rm.Str("name", rc.Name)
			rm.Str("cluster", rc.Cluster)
			if rc.HashHeader != "" {
				rm.Str("hash_header", rc.HashHeader)
			}
			seq.Content = append(seq.Content, rm.Node())
		}
		m.Add("route_configs", seq)
	}
	if len(x.Clusters) > 0 {
		seq := form.Seq()
		for _, c := range x.Clusters {
			seq.Content = append(seq.Content, clusterNode(c))
		}
		m.Add("clusters", seq)
	}
	if len(x.Endpoints) > 0 {
		seq := form.Seq()
		for _, la := range x.Endpoints {
			seq.Content = append(seq.Content, loadAssignmentNode(la))
		}
		m.Add("endpoints", seq)
	}
	return m.Node()
}

func clusterNode(c Cluster) *yaml.Node {
	m := &form.Mapping{}
	m.Str("name", c.Name)
	m.Str("type", string(c.Type))
	if len(c.Clusters) > 0 {
		m.Add("clusters", form.FlowStrs(c.Clusters))
	}
	m.Str("dns_host", c.DNSHost)
	m.Uint("dns_port", uint64(c.DNSPort))
	m.Str("lb_policy", c.LBPolicy)
	if c.Shuffle {
		m.Add("shuffle", form.Scalar("!!bool", "true"))
	}
	m.Uint("min_ring_size", c.MinRingSize)
	m.Uint("max_ring_size", c.MaxRingSize)
	if od := c.OutlierDetection; od != nil {
		m.Add("outlier_detection", outlierDetectionNode(*od))
	}
	if uc := c.UpstreamConfig; uc != nil {
		m.Add("upstream_config", upstreamConfigNode(*uc))
	}
	n := m.Node()
	if len(n.Content) <= 8 && c.OutlierDetection == nil && c.UpstreamConfig == nil {
		n.Style = yaml.FlowStyle // short clusters on one line
	}
	return n
}

func outlierDetectionNode(od OutlierDetection) *yaml.Node {
	om := &form.Mapping{Flow: true}
	om.Dur("interval", od.Interval)
	om.Dur("base_ejection_time", od.BaseEjectionTime)
	om.Dur("max_ejection_time", od.MaxEjectionTime)
	om.Uint("max_ejection_percent", uint64(od.MaxEjectionPercent))
	if sr := od.SuccessRate; sr != nil {
		sm := &form.Mapping{Flow: true}
		sm.Uint("stdev_factor", uint64(sr.StdevFactor))
		sm.Uint("enforcement", uint64(sr.Enforcement))
		sm.Uint("minimum_hosts", uint64(sr.MinimumHosts))
		sm.Uint("request_volume", uint64(sr.RequestVolume))
		om.Add("success_rate", sm.Node())
	}
	if fp := od.FailurePercentage; fp != nil {
		fm := &form.Mapping{Flow: true}
		fm.Uint("threshold", uint64(fp.Threshold))
		fm.Uint("enforcement", uint64(fp.Enforcement))
		fm.Uint("minimum_hosts", uint64(fp.MinimumHosts))
		fm.Uint("request_volume", uint64(fp.RequestVolume))
		om.Add("failure_percentage", fm.Node())
	}
	return om.Node()
}

func upstreamConfigNode(uc UpstreamConfig) *yaml.Node {
	um := &form.Mapping{Flow: true}
	if h := uc.HTTPProtocolOptions; h != nil {
		hm := &form.Mapping{Flow: true}
		if h.Common {
			hm.Add("common", form.Scalar("!!bool", "true"))
		}
		if d := h.IdleTimeout; d != nil {
			dm := &form.Mapping{Flow: true}
			dm.Add("seconds", form.Scalar("!!int", strconv.FormatInt(d.Seconds, 10)))
			dm.Add("nanos", form.Scalar("!!int", strconv.FormatInt(int64(d.Nanos), 10)))
			hm.Add("idle_timeout", dm.Node())
		}
		um.Add("http_protocol_options", hm.Node())
	}
	um.Str("type_url", uc.TypeURL)
	return um.Node()
}

func loadAssignmentNode(la LoadAssignment) *yaml.Node {
	m := &form.Mapping{}
	m.Str("cluster", la.Cluster)
	if len(la.Priorities) > 0 {
		ps := form.Seq()
		for _, pr := range la.Priorities {
			pm := &form.Mapping{}
			ls := form.Seq()
			for _, l := range pr.Localities {
				ls.Content = append(ls.Content, localityNode(l))
			}
			// A priority with no localities is written as {} (it still
			// counts: priorities are numbered by position).
			if len(ls.Content) > 0 {
				pm.Add("localities", ls)
			} else {
				pm.Flow = true
			}
			ps.Content = append(ps.Content, pm.Node())
		}
		m.Add("priorities", ps)
	}
	return m.Node()
}

func localityNode(l Locality) *yaml.Node {
	lm := &form.Mapping{}
	lm.Str("name", l.Name)
	lm.Uint("weight", uint64(l.Weight))
	if len(l.Endpoints) > 0 {
		es := form.Seq()
		for _, e := range l.Endpoints {
			es.Content = append(es.Content, endpointNode(e))
		}
		lm.Add("endpoints", es)
	}
	return lm.Node()
}

func endpointNode(e Endpoint) *yaml.Node {
	em := &form.Mapping{Flow: true}
	em.Str("addr", string(e.Addr))
	if len(e.AdditionalAddrs) > 0 {
		more := make([]string, len(e.AdditionalAddrs))
		for i, a := range e.AdditionalAddrs {
			more[i] = string(a)
		}
		em.Add("additional_addresses", form.FlowStrs(more))
	}
	if len(e.InvalidAdditionalAddrs) > 0 {
		em.Add("invalid_additional_addresses", form.FlowStrs(e.InvalidAdditionalAddrs))
	}
	em.Str("health", e.Health)
	em.Uint("weight", uint64(e.Weight))
	return em.Node()
}
