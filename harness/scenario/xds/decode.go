package xds

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/conformlab/conform/harness/scenario/internal/form"
)

// The YAML form of an xds step:
//
//	xds:
//	  version: "2"
//	  listeners: [{name: svc, route_config: rc}]
//	  route_configs: [{name: rc, cluster: agg}]   # hash_header: x-key (a ring_hash hash policy)
//	  clusters:
//	    - {name: agg, type: AGGREGATE, clusters: [c1, dns]}
//	    - name: c1
//	      type: EDS
//	      lb_policy: pick_first
//	      shuffle: true
//	      upstream_config: {http_protocol_options: {idle_timeout: {seconds: 30}}}
//	    - {name: dns, type: LOGICAL_DNS, dns_host: svc.conform}
//	  endpoints:
//	    - cluster: c1
//	      priorities:
//	        - localities:
//	            - name: z1
//	              weight: 1
//	              endpoints:
//	                - {addr: b1/ipv4, additional_addresses: [b1/ipv6], health: HEALTHY}
//	                - {addr: b2/ipv4, invalid_additional_addresses: [port_out_of_range]}

// reader reads the xds step's tree with the scenario's reader, which keeps
// every field's line for the scenario's validation errors.
type reader struct {
	*form.Reader
}

// Decode reads the xds step n, at path p in the scenario's YAML form, with
// the scenario's reader r. Problems are *scenario.Error values with the
// line and field.
func Decode(r *form.Reader, n *yaml.Node, p string) (Resources, error) {
	return reader{r}.resources(n, p)
}

func (r reader) resources(n *yaml.Node, p string) (Resources, error) {
	var x Resources
	f, err := r.Fields(n, p, "version", "listeners", "route_configs", "clusters", "endpoints")
	if err != nil {
		return x, err
	}
	if x.Version, err = r.OptStr(f, p, "version"); err != nil {
		return x, err
	}
	err = r.List(f, p, "listeners", func(it *yaml.Node, ip string) error {
		l, err := r.listener(it, ip)
		x.Listeners = append(x.Listeners, l)
		return err
	})
	if err != nil {
		return x, err
	}
	err = r.List(f, p, "route_configs", func(it *yaml.Node, ip string) error {
		rc, err := r.routeConfig(it, ip)
		x.RouteConfigs = append(x.RouteConfigs, rc)
		return err
	})
	if err != nil {
		return x, err
	}
	err = r.List(f, p, "clusters", func(it *yaml.Node, ip string) error {
		c, err := r.cluster(it, ip)
		x.Clusters = append(x.Clusters, c)
		return err
	})
	if err != nil {
		return x, err
	}
	err = r.List(f, p, "endpoints", func(it *yaml.Node, ip string) error {
		la, err := r.loadAssignment(it, ip)
		x.Endpoints = append(x.Endpoints, la)
		return err
	})
	return x, err
}

func (r reader) listener(n *yaml.Node, p string) (Listener, error) {
	var l Listener
	f, err := r.Fields(n, p, "name", "route_config")
	if err != nil {
		return l, err
	}
	err = r.Strs(f, p, []form.Field[string]{{Key: "name", Dst: &l.Name}, {Key: "route_config", Dst: &l.RouteConfig}})
	return l, err
}

func (r reader) routeConfig(n *yaml.Node, p string) (RouteConfig, error) {
	var rc RouteConfig
	f, err := r.Fields(n, p, "name", "cluster", "hash_header")
	if err != nil {
		return rc, err
	}
	err = r.Strs(f, p, []form.Field[string]{{Key: "name", Dst: &rc.Name}, {Key: "cluster", Dst: &rc.Cluster}, {Key: "hash_header", Dst: &rc.HashHeader}})
	return rc, err
}

func (r reader) cluster(n *yaml.Node, p string) (Cluster, error) {
	var c Cluster
	f, err := r.Fields(n, p, "name", "type", "clusters", "dns_host", "dns_port", "lb_policy", "shuffle",
		"min_ring_size", "max_ring_size", "outlier_detection", "upstream_config")
	if err != nil {
		return c, err
	}
	var typ string
	if err := r.Strs(f, p, []form.Field[string]{
		{Key: "name", Dst: &c.Name}, {Key: "type", Dst: &typ}, {Key: "dns_host", Dst: &c.DNSHost}, {Key: "lb_policy", Dst: &c.LBPolicy},
	}); err != nil {
		return c, err
	}
	c.Type = ClusterType(typ)
	if c.Clusters, err = r.StrList(f, p, "clusters"); err != nil {
		return c, err
	}
	port, err := r.OptUint(f, p, "dns_port", 16)
	if err != nil {
		return c, err
	}
	c.DNSPort = int(port)
	if c.Shuffle, err = r.OptBool(f, p, "shuffle"); err != nil {
		return c, err
	}
	if c.MinRingSize, err = r.OptUint(f, p, "min_ring_size", 64); err != nil {
		return c, err
	}
	if c.MaxRingSize, err = r.OptUint(f, p, "max_ring_size", 64); err != nil {
		return c, err
	}
	if v, ok := f["outlier_detection"]; ok {
		if c.OutlierDetection, err = r.outlierDetection(v, form.Join(p, "outlier_detection")); err != nil {
			return c, err
		}
	}
	if v, ok := f["upstream_config"]; ok {
		if c.UpstreamConfig, err = r.upstreamConfig(v, form.Join(p, "upstream_config")); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (r reader) outlierDetection(n *yaml.Node, p string) (*OutlierDetection, error) {
	f, err := r.Fields(n, p, "interval", "base_ejection_time", "max_ejection_time", "max_ejection_percent",
		"success_rate", "failure_percentage")
	if err != nil {
		return nil, err
	}
	od := &OutlierDetection{}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{{"interval", &od.Interval}, {"base_ejection_time", &od.BaseEjectionTime}, {"max_ejection_time", &od.MaxEjectionTime}} {
		if v, ok := f[d.key]; ok {
			if *d.dst, err = r.Duration(v, form.Join(p, d.key)); err != nil {
				return nil, err
			}
		}
	}
	mp, err := r.OptUint(f, p, "max_ejection_percent", 32)
	if err != nil {
		return nil, err
	}
	od.MaxEjectionPercent = uint32(mp)
	if v, ok := f["success_rate"]; ok {
		sp := form.Join(p, "success_rate")
		g, err := r.Fields(v, sp, "stdev_factor", "enforcement", "minimum_hosts", "request_volume")
		if err != nil {
			return nil, err
		}
		sr := &SuccessRate{}
		if err := r.Uint32s(g, sp, []form.Field[uint32]{
			{Key: "stdev_factor", Dst: &sr.StdevFactor}, {Key: "enforcement", Dst: &sr.Enforcement},
			{Key: "minimum_hosts", Dst: &sr.MinimumHosts}, {Key: "request_volume", Dst: &sr.RequestVolume},
		}); err != nil {
			return nil, err
		}
		od.SuccessRate = sr
	}
	if v, ok := f["failure_percentage"]; ok {
		fp := form.Join(p, "failure_percentage")
		g, err := r.Fields(v, fp, "threshold", "enforcement", "minimum_hosts", "request_volume")
		if err != nil {
			return nil, err
		}
		fpct := &FailurePercentage{}
		if err := r.Uint32s(g, fp, []form.Field[uint32]{
			{Key: "threshold", Dst: &fpct.Threshold}, {Key: "enforcement", Dst: &fpct.Enforcement},
			{Key: "minimum_hosts", Dst: &fpct.MinimumHosts}, {Key: "request_volume", Dst: &fpct.RequestVolume},
		}); err != nil {
			return nil, err
		}
		od.FailurePercentage = fpct
	}
	return od, nil
}

func (r reader) upstreamConfig(n *yaml.Node, p string) (*UpstreamConfig, error) {
	f, err := r.Fields(n, p, "http_protocol_options", "type_url")
	if err != nil {
		return nil, err
	}
	uc := &UpstreamConfig{}
	if uc.TypeURL, err = r.OptStr(f, p, "type_url"); err != nil {
		return nil, err
	}
	v, ok := f["http_protocol_options"]
	if !ok {
		return uc, nil
	}
	hp := form.Join(p, "http_protocol_options")
	g, err := r.Fields(v, hp, "common", "idle_timeout")
	if err != nil {
		return nil, err
	}
	h := &HTTPProtocolOptions{}
	if h.Common, err = r.OptBool(g, hp, "common"); err != nil {
		return nil, err
	}
	if it, ok := g["idle_timeout"]; ok {
		ip := form.Join(hp, "idle_timeout")
		d, err := r.Fields(it, ip, "seconds", "nanos")
		if err != nil {
			return nil, err
		}
		var dur Duration
		if dur.Seconds, err = r.OptInt(d, ip, "seconds", 64); err != nil {
			return nil, err
		}
		nanos, err := r.OptInt(d, ip, "nanos", 32)
		if err != nil {
			return nil, err
		}
		dur.Nanos = int32(nanos)
		h.IdleTimeout = &dur
	}
	uc.HTTPProtocolOptions = h
	return uc, nil
}

func (r reader) loadAssignment(n *yaml.Node, p string) (LoadAssignment, error) {
	var la LoadAssignment
	f, err := r.Fields(n, p, "cluster", "priorities")
	if err != nil {
		return la, err
	}
	if la.Cluster, err = r.OptStr(f, p, "cluster"); err != nil {
		return la, err
	}
	err = r.List(f, p, "priorities", func(it *yaml.Node, pp string) error {
		g, err := r.Fields(it, pp, "localities")
		if err != nil {
			return err
		}
		var pr Priority
		err = r.List(g, pp, "localities", func(it *yaml.Node, lp string) error {
			l, err := r.locality(it, lp)
			pr.Localities = append(pr.Localities, l)
			return err
		})
		la.Priorities = append(la.Priorities, pr)
		return err
	})
	return la, err
}

func (r reader) locality(n *yaml.Node, p string) (Locality, error) {
	var l Locality
	f, err := r.Fields(n, p, "name", "weight", "endpoints")
	if err != nil {
		return l, err
	}
	if l.Name, err = r.OptStr(f, p, "name"); err != nil {
		return l, err
	}
	w, err := r.OptUint(f, p, "weight", 32)
	if err != nil {
		return l, err
	}
	l.Weight = uint32(w)
	err = r.List(f, p, "endpoints", func(it *yaml.Node, ep string) error {
		g, err := r.Fields(it, ep, "addr", "additional_addresses", "invalid_additional_addresses", "health", "weight")
		if err != nil {
			return err
		}
		var e Endpoint
		var addr string
		if err := r.Strs(g, ep, []form.Field[string]{{Key: "addr", Dst: &addr}, {Key: "health", Dst: &e.Health}}); err != nil {
			return err
		}
		e.Addr = form.Addr(addr)
		more, err := r.StrList(g, ep, "additional_addresses")
		if err != nil {
			return err
		}
		for _, a := range more {
			e.AdditionalAddrs = append(e.AdditionalAddrs, form.Addr(a))
		}
		if e.InvalidAdditionalAddrs, err = r.StrList(g, ep, "invalid_additional_addresses"); err != nil {
			return err
		}
		w, err := r.OptUint(g, ep, "weight", 32)
		e.Weight = uint32(w)
		l.Endpoints = append(l.Endpoints, e)
		return err
	})
	return l, err
}
