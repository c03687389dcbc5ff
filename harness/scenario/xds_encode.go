package scenario

import (
	"strconv"

	"go.yaml.in/yaml/v3"
)

// xdsNode is the YAML form of an xds step (see xds_decode.go), in the order
// the reader documents; zero fields are left out.
func xdsNode(x XDSResources) *yaml.Node {
	m := &mapping{}
	m.str("version", x.Version)
	if len(x.Listeners) > 0 {
		seq := seqNode()
		for _, l := range x.Listeners {
			lm := &mapping{flow: true}
			lm.str("name", l.Name)
			lm.str("route_config", l.RouteConfig)
			seq.Content = append(seq.Content, lm.node())
		}
		m.add("listeners", seq)
	}
	if len(x.RouteConfigs) > 0 {
		seq := seqNode()
		for _, rc := range x.RouteConfigs {
			rm := &mapping{flow: true}
			rm.str("name", rc.Name)
			rm.str("cluster", rc.Cluster)
			seq.Content = append(seq.Content, rm.node())
		}
		m.add("route_configs", seq)
	}
	if len(x.Clusters) > 0 {
		seq := seqNode()
		for _, c := range x.Clusters {
			seq.Content = append(seq.Content, clusterNode(c))
		}
		m.add("clusters", seq)
	}
	if len(x.Endpoints) > 0 {
		seq := seqNode()
		for _, la := range x.Endpoints {
			seq.Content = append(seq.Content, loadAssignmentNode(la))
		}
		m.add("endpoints", seq)
	}
	return m.node()
}

func clusterNode(c XDSCluster) *yaml.Node {
	m := &mapping{}
	m.str("name", c.Name)
	m.str("type", string(c.Type))
	if len(c.Clusters) > 0 {
		m.add("clusters", flowStrs(c.Clusters))
	}
	m.str("dns_host", c.DNSHost)
	m.uint("dns_port", uint64(c.DNSPort))
	m.str("lb_policy", c.LBPolicy)
	if c.Shuffle {
		m.add("shuffle", scalar("!!bool", "true"))
	}
	m.uint("min_ring_size", c.MinRingSize)
	m.uint("max_ring_size", c.MaxRingSize)
	if od := c.OutlierDetection; od != nil {
		om := &mapping{flow: true}
		om.dur("interval", od.Interval)
		om.dur("base_ejection_time", od.BaseEjectionTime)
		om.dur("max_ejection_time", od.MaxEjectionTime)
		om.uint("max_ejection_percent", uint64(od.MaxEjectionPercent))
		if sr := od.SuccessRate; sr != nil {
			sm := &mapping{flow: true}
			sm.uint("stdev_factor", uint64(sr.StdevFactor))
			sm.uint("enforcement", uint64(sr.Enforcement))
			sm.uint("minimum_hosts", uint64(sr.MinimumHosts))
			sm.uint("request_volume", uint64(sr.RequestVolume))
			om.add("success_rate", sm.node())
		}
		if fp := od.FailurePercentage; fp != nil {
			fm := &mapping{flow: true}
			fm.uint("threshold", uint64(fp.Threshold))
			fm.uint("enforcement", uint64(fp.Enforcement))
			fm.uint("minimum_hosts", uint64(fp.MinimumHosts))
			fm.uint("request_volume", uint64(fp.RequestVolume))
			om.add("failure_percentage", fm.node())
		}
		m.add("outlier_detection", om.node())
	}
	if uc := c.UpstreamConfig; uc != nil {
		um := &mapping{flow: true}
		if h := uc.HTTPProtocolOptions; h != nil {
			hm := &mapping{flow: true}
			if h.Common {
				hm.add("common", scalar("!!bool", "true"))
			}
			if d := h.IdleTimeout; d != nil {
				dm := &mapping{flow: true}
				dm.add("seconds", scalar("!!int", strconv.FormatInt(d.Seconds, 10)))
				dm.add("nanos", scalar("!!int", strconv.FormatInt(int64(d.Nanos), 10)))
				hm.add("idle_timeout", dm.node())
			}
			um.add("http_protocol_options", hm.node())
		}
		um.str("type_url", uc.TypeURL)
		m.add("upstream_config", um.node())
	}
	n := m.node()
	if len(n.Content) <= 8 && c.OutlierDetection == nil && c.UpstreamConfig == nil {
		n.Style = yaml.FlowStyle // short clusters on one line
	}
	return n
}

func loadAssignmentNode(la XDSLoadAssignment) *yaml.Node {
	m := &mapping{}
	m.str("cluster", la.Cluster)
	if len(la.Priorities) > 0 {
		ps := seqNode()
		for _, pr := range la.Priorities {
			pm := &mapping{}
			ls := seqNode()
			for _, l := range pr.Localities {
				lm := &mapping{}
				lm.str("name", l.Name)
				lm.uint("weight", uint64(l.Weight))
				if len(l.Endpoints) > 0 {
					es := seqNode()
					for _, e := range l.Endpoints {
						em := &mapping{flow: true}
						em.str("addr", string(e.Addr))
						if len(e.AdditionalAddrs) > 0 {
							more := make([]string, len(e.AdditionalAddrs))
							for i, a := range e.AdditionalAddrs {
								more[i] = string(a)
							}
							em.add("additional_addresses", flowStrs(more))
						}
						if len(e.InvalidAdditionalAddrs) > 0 {
							em.add("invalid_additional_addresses", flowStrs(e.InvalidAdditionalAddrs))
						}
						em.str("health", e.Health)
						em.uint("weight", uint64(e.Weight))
						es.Content = append(es.Content, em.node())
					}
					lm.add("endpoints", es)
				}
				ls.Content = append(ls.Content, lm.node())
			}
			// A priority with no localities is written as {} (it still
			// counts: priorities are numbered by position).
			if len(ls.Content) > 0 {
				pm.add("localities", ls)
			} else {
				pm.flow = true
			}
			ps.Content = append(ps.Content, pm.node())
		}
		m.add("priorities", ps)
	}
	return m.node()
}

func flowStrs(xs []string) *yaml.Node {
	seq := seqNode()
	seq.Style = yaml.FlowStyle
	for _, x := range xs {
		seq.Content = append(seq.Content, scalar("!!str", x))
	}
	return seq
}

// uint adds key unless v is zero.
func (m *mapping) uint(key string, v uint64) {
	if v != 0 {
		m.add(key, scalar("!!int", strconv.FormatUint(v, 10)))
	}
}
