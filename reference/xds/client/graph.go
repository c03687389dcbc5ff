package client

import (
	"errors"
	"fmt"
	"strings"
)

// MaxAggregateDepth is A37's depth limit on the tree of aggregate clusters.
// The route's cluster is at depth 0; a cluster reached at depth 16 or more is
// an error.
const MaxAggregateDepth = 16

// ErrNotExist is wrapped by errors about resources the server says do not
// exist.
var ErrNotExist = errors.New("resource does not exist")

// lookup gives the graph walk the clusters received so far: the cluster, or
// ok false when it has not arrived, or err when it does not exist.
type lookup func(name string) (c *Cluster, ok bool, err error)

// walk is A37's graph resolution ("CDS LB Policy Support for Aggregate and
// Logical DNS Clusters"): depth-first from root, each underlying cluster
// taken once, at the earliest position it is seen. It returns the leaves in
// order, every cluster name reached (for subscribing, whether or not it has
// arrived), whether every cluster reached has arrived, and an error for a
// missing cluster, a graph deeper than MaxAggregateDepth, or a graph with no
// leaf.
func walk(root string, get lookup) (leaves, reached []string, complete bool, err error) {
	w := &walker{get: get, seen: map[string]bool{}, complete: true}
	err = w.visit(root, 0)
	if err == nil && w.complete && len(w.leaves) == 0 {
		err = fmt.Errorf("aggregate cluster graph of %q has no leaf clusters", root)
	}
	return w.leaves, w.reached, w.complete, err
}

type walker struct {
	get      lookup
	seen     map[string]bool
	leaves   []string
	reached  []string
	complete bool
}

func (w *walker) visit(name string, depth int) error {
	if depth >= MaxAggregateDepth {
		return fmt.Errorf("aggregate cluster graph exceeds the depth limit of %d at cluster %q", MaxAggregateDepth, name)
	}
	if w.seen[name] {
		return nil // de-duplicated: kept at its first position.
	}
	w.seen[name] = true
	w.reached = append(w.reached, name)
	c, ok, err := w.get(name)
	if err != nil {
		return err
	}
	if !ok {
		w.complete = false
		return nil
	}
	if c.Kind != KindAggregate {
		w.leaves = append(w.leaves, name)
		return nil
	}
	for _, child := range c.Children {
		if err := w.visit(child, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// routeCluster chooses the cluster the listener's RPCs go to: the virtual
// host whose domains best match host (A27: exact, then suffix wildcard, then
// prefix wildcard, then "*"; longer matches first), then its first route
// that matches every path (prefix "" or "/"), which must send to one cluster.
func routeCluster(rc *RouteConfig, host string) (Route, error) {
	var best *VirtualHost
	bestKind, bestLen := 5, -1
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		for _, d := range vh.Domains {
			k, l := domainMatch(d, host)
			if k < 0 {
				continue
			}
			if k < bestKind || (k == bestKind && l > bestLen) {
				best, bestKind, bestLen = vh, k, l
			}
		}
	}
	if best == nil {
		return Route{}, fmt.Errorf("route configuration %q has no virtual host for %q", rc.Name, host)
	}
	for _, r := range best.Routes {
		if r.Prefix == nil || (*r.Prefix != "" && *r.Prefix != "/") {
			continue
		}
		if r.Unsupported != "" {
			return Route{}, fmt.Errorf("virtual host %q: default route is not supported: %s", best.Name, r.Unsupported)
		}
		return r, nil
	}
	return Route{}, fmt.Errorf("virtual host %q has no default route (prefix \"\" or \"/\")", best.Name)
}

// domainMatch returns the kind of match (0 exact, 1 suffix wildcard, 2
// prefix wildcard, 3 "*") and its length, or -1 when d does not match host.
func domainMatch(d, host string) (int, int) {
	d, host = strings.ToLower(d), strings.ToLower(host)
	switch {
	case d == "*":
		return 3, 1
	case d == host:
		return 0, len(d)
	case strings.HasPrefix(d, "*") && strings.HasSuffix(host, d[1:]):
		return 1, len(d)
	case strings.HasSuffix(d, "*") && strings.HasPrefix(host, d[:len(d)-1]):
		return 2, len(d)
	}
	return -1, 0
}
