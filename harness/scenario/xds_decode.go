package scenario

import (
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// The YAML form of an xds step:
//
//	xds:
//	  version: "2"
//	  listeners: [{name: svc, route_config: rc}]
//	  route_configs: [{name: rc, cluster: agg}]
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

func (r *reader) xds(n *yaml.Node, p string) (Action, error) {
	f, err := r.fields(n, p, "version", "listeners", "route_configs", "clusters", "endpoints")
	if err != nil {
		return nil, err
	}
	var x XDSResources
	if x.Version, err = r.optStr(f, "version", p); err != nil {
		return nil, err
	}
	err = r.list(f, p, "listeners", func(it *yaml.Node, ip string) error {
		g, err := r.fields(it, ip, "name", "route_config")
		if err != nil {
			return err
		}
		var l XDSListener
		if err := r.strs(g, ip, []field[string]{{"name", &l.Name}, {"route_config", &l.RouteConfig}}); err != nil {
			return err
		}
		x.Listeners = append(x.Listeners, l)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = r.list(f, p, "route_configs", func(it *yaml.Node, ip string) error {
		g, err := r.fields(it, ip, "name", "cluster")
		if err != nil {
			return err
		}
		var rc XDSRouteConfig
		if err := r.strs(g, ip, []field[string]{{"name", &rc.Name}, {"cluster", &rc.Cluster}}); err != nil {
			return err
		}
		x.RouteConfigs = append(x.RouteConfigs, rc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = r.list(f, p, "clusters", func(it *yaml.Node, ip string) error {
		c, err := r.xdsCluster(it, ip)
		x.Clusters = append(x.Clusters, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = r.list(f, p, "endpoints", func(it *yaml.Node, ip string) error {
		la, err := r.loadAssignment(it, ip)
		x.Endpoints = append(x.Endpoints, la)
		return err
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// list calls each for every element of the list field key of f, if present.
func (r *reader) list(f map[string]*yaml.Node, p, key string, each func(*yaml.Node, string) error) error {
	v, ok := f[key]
	if !ok {
		return nil
	}
	items, err := r.items(v, join(p, key))
	if err != nil {
		return err
	}
	for i, it := range items {
		if err := each(it, index(join(p, key), i)); err != nil {
			return err
		}
	}
	return nil
}

// field names a destination for a field of a mapping.
type field[T any] struct {
	key string
	dst *T
}

// strs reads the optional string fields of f named in dst, in order.
func (r *reader) strs(f map[string]*yaml.Node, p string, dst []field[string]) error {
	for _, d := range dst {
		v, err := r.optStr(f, d.key, p)
		if err != nil {
			return err
		}
		*d.dst = v
	}
	return nil
}

// strList reads the optional list of strings key of f.
func (r *reader) strList(f map[string]*yaml.Node, p, key string) ([]string, error) {
	var out []string
	err := r.list(f, p, key, func(it *yaml.Node, ip string) error {
		s, err := r.str(it, ip)
		out = append(out, s)
		return err
	})
	return out, err
}

// optUint reads the optional unsigned integer key of f, of bits bits.
func (r *reader) optUint(f map[string]*yaml.Node, p, key string, bits int) (uint64, error) {
	n, ok := f[key]
	if !ok {
		return 0, nil
	}
	path := join(p, key)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, r.errAt(n, path, "must be an integer")
	}
	v, err := strconv.ParseUint(n.Value, 10, bits)
	if err != nil {
		return 0, r.errAt(n, path, "must be a decimal integer from 0 to %d", uint64(1)<<bits-1)
	}
	return v, nil
}

// optInt reads the optional signed integer key of f, of bits bits.
func (r *reader) optInt(f map[string]*yaml.Node, p, key string, bits int) (int64, error) {
	n, ok := f[key]
	if !ok {
		return 0, nil
	}
	path := join(p, key)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, r.errAt(n, path, "must be an integer")
	}
	v, err := strconv.ParseInt(n.Value, 10, bits)
	if err != nil {
		return 0, r.errAt(n, path, "must be a decimal %d-bit integer", bits)
	}
	return v, nil
}

func (r *reader) optBool(f map[string]*yaml.Node, p, key string) (bool, error) {
	n, ok := f[key]
	if !ok {
		return false, nil
	}
	return r.boolean(n, join(p, key))
}

func (r *reader) xdsCluster(n *yaml.Node, p string) (XDSCluster, error) {
	var c XDSCluster
	f, err := r.fields(n, p, "name", "type", "clusters", "dns_host", "dns_port", "lb_policy", "shuffle",
		"min_ring_size", "max_ring_size", "outlier_detection", "upstream_config")
	if err != nil {
		return c, err
	}
	var typ string
	if err := r.strs(f, p, []field[string]{{"name", &c.Name}, {"type", &typ}, {"dns_host", &c.DNSHost}, {"lb_policy", &c.LBPolicy}}); err != nil {
		return c, err
	}
	c.Type = ClusterType(typ)
	if c.Clusters, err = r.strList(f, p, "clusters"); err != nil {
		return c, err
	}
	port, err := r.optUint(f, p, "dns_port", 16)
	if err != nil {
		return c, err
	}
	c.DNSPort = int(port)
	if c.Shuffle, err = r.optBool(f, p, "shuffle"); err != nil {
		return c, err
	}
	if c.MinRingSize, err = r.optUint(f, p, "min_ring_size", 64); err != nil {
		return c, err
	}
	if c.MaxRingSize, err = r.optUint(f, p, "max_ring_size", 64); err != nil {
		return c, err
	}
	if v, ok := f["outlier_detection"]; ok {
		if c.OutlierDetection, err = r.outlierDetection(v, join(p, "outlier_detection")); err != nil {
			return c, err
		}
	}
	if v, ok := f["upstream_config"]; ok {
		if c.UpstreamConfig, err = r.upstreamConfig(v, join(p, "upstream_config")); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (r *reader) outlierDetection(n *yaml.Node, p string) (*XDSOutlierDetection, error) {
	f, err := r.fields(n, p, "interval", "base_ejection_time", "max_ejection_time", "max_ejection_percent",
		"success_rate", "failure_percentage")
	if err != nil {
		return nil, err
	}
	od := &XDSOutlierDetection{}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{{"interval", &od.Interval}, {"base_ejection_time", &od.BaseEjectionTime}, {"max_ejection_time", &od.MaxEjectionTime}} {
		if v, ok := f[d.key]; ok {
			if *d.dst, err = r.duration(v, join(p, d.key)); err != nil {
				return nil, err
			}
		}
	}
	mp, err := r.optUint(f, p, "max_ejection_percent", 32)
	if err != nil {
		return nil, err
	}
	od.MaxEjectionPercent = uint32(mp)
	if v, ok := f["success_rate"]; ok {
		sp := join(p, "success_rate")
		g, err := r.fields(v, sp, "stdev_factor", "enforcement", "minimum_hosts", "request_volume")
		if err != nil {
			return nil, err
		}
		sr := &XDSSuccessRate{}
		if err := r.uint32s(g, sp, []field[uint32]{{"stdev_factor", &sr.StdevFactor}, {"enforcement", &sr.Enforcement},
			{"minimum_hosts", &sr.MinimumHosts}, {"request_volume", &sr.RequestVolume}}); err != nil {
			return nil, err
		}
		od.SuccessRate = sr
	}
	if v, ok := f["failure_percentage"]; ok {
		fp := join(p, "failure_percentage")
		g, err := r.fields(v, fp, "threshold", "enforcement", "minimum_hosts", "request_volume")
		if err != nil {
			return nil, err
		}
		fpct := &XDSFailurePercentage{}
		if err := r.uint32s(g, fp, []field[uint32]{{"threshold", &fpct.Threshold}, {"enforcement", &fpct.Enforcement},
			{"minimum_hosts", &fpct.MinimumHosts}, {"request_volume", &fpct.RequestVolume}}); err != nil {
			return nil, err
		}
		od.FailurePercentage = fpct
	}
	return od, nil
}

// uint32s reads the optional uint32 fields of f named in dst, in order.
func (r *reader) uint32s(f map[string]*yaml.Node, p string, dst []field[uint32]) error {
	for _, d := range dst {
		v, err := r.optUint(f, p, d.key, 32)
		if err != nil {
			return err
		}
		*d.dst = uint32(v)
	}
	return nil
}

func (r *reader) upstreamConfig(n *yaml.Node, p string) (*XDSUpstreamConfig, error) {
	f, err := r.fields(n, p, "http_protocol_options", "type_url")
	if err != nil {
		return nil, err
	}
	uc := &XDSUpstreamConfig{}
	if uc.TypeURL, err = r.optStr(f, "type_url", p); err != nil {
		return nil, err
	}
	v, ok := f["http_protocol_options"]
	if !ok {
		return uc, nil
	}
	hp := join(p, "http_protocol_options")
	g, err := r.fields(v, hp, "common", "idle_timeout")
	if err != nil {
		return nil, err
	}
	h := &XDSHTTPProtocolOptions{}
	if h.Common, err = r.optBool(g, hp, "common"); err != nil {
		return nil, err
	}
	if it, ok := g["idle_timeout"]; ok {
		ip := join(hp, "idle_timeout")
		d, err := r.fields(it, ip, "seconds", "nanos")
		if err != nil {
			return nil, err
		}
		var dur XDSDuration
		if dur.Seconds, err = r.optInt(d, ip, "seconds", 64); err != nil {
			return nil, err
		}
		nanos, err := r.optInt(d, ip, "nanos", 32)
		if err != nil {
			return nil, err
		}
		dur.Nanos = int32(nanos)
		h.IdleTimeout = &dur
	}
	uc.HTTPProtocolOptions = h
	return uc, nil
}

func (r *reader) loadAssignment(n *yaml.Node, p string) (XDSLoadAssignment, error) {
	var la XDSLoadAssignment
	f, err := r.fields(n, p, "cluster", "priorities")
	if err != nil {
		return la, err
	}
	if la.Cluster, err = r.optStr(f, "cluster", p); err != nil {
		return la, err
	}
	err = r.list(f, p, "priorities", func(it *yaml.Node, pp string) error {
		g, err := r.fields(it, pp, "localities")
		if err != nil {
			return err
		}
		var pr XDSPriority
		err = r.list(g, pp, "localities", func(it *yaml.Node, lp string) error {
			l, err := r.locality(it, lp)
			pr.Localities = append(pr.Localities, l)
			return err
		})
		la.Priorities = append(la.Priorities, pr)
		return err
	})
	return la, err
}

func (r *reader) locality(n *yaml.Node, p string) (XDSLocality, error) {
	var l XDSLocality
	f, err := r.fields(n, p, "name", "weight", "endpoints")
	if err != nil {
		return l, err
	}
	if l.Name, err = r.optStr(f, "name", p); err != nil {
		return l, err
	}
	w, err := r.optUint(f, p, "weight", 32)
	if err != nil {
		return l, err
	}
	l.Weight = uint32(w)
	err = r.list(f, p, "endpoints", func(it *yaml.Node, ep string) error {
		g, err := r.fields(it, ep, "addr", "additional_addresses", "invalid_additional_addresses", "health", "weight")
		if err != nil {
			return err
		}
		var e XDSEndpoint
		var addr string
		if err := r.strs(g, ep, []field[string]{{"addr", &addr}, {"health", &e.Health}}); err != nil {
			return err
		}
		e.Addr = Addr(addr)
		more, err := r.strList(g, ep, "additional_addresses")
		if err != nil {
			return err
		}
		for _, a := range more {
			e.AdditionalAddrs = append(e.AdditionalAddrs, Addr(a))
		}
		if e.InvalidAdditionalAddrs, err = r.strList(g, ep, "invalid_additional_addresses"); err != nil {
			return err
		}
		w, err := r.optUint(g, ep, "weight", 32)
		e.Weight = uint32(w)
		l.Endpoints = append(l.Endpoints, e)
		return err
	})
	return l, err
}
