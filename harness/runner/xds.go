package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"google.golang.org/grpc/resolver"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/xdsres"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/reference"
	"github.com/conformlab/conform/reference/xds/client"
	xdsresolver "github.com/conformlab/conform/reference/xds/resolver"
)

// xdsNode is the node id the reference's xDS client sends, in both modes.
const xdsNode = "conform-reference"

// xdsOptions are xdsres's options for the runners' address plan.
var xdsOptions = xdsres.Options{AddrOf: AddrOf, Port: int(netlab.DefaultPort)}

// xdsDNS answers a LOGICAL_DNS cluster's lookups, in both modes, from the
// scenario's resolve steps (scenario.TargetXDS: "Resolver updates feed the
// lab DNS"): every name resolves to the IPs of the last resolve step's
// addresses, in order. It stands in for the lab's DNS server; the lookup is
// made when the resolver builds a state (a new configuration, or
// re-resolution), as the reference resolver makes it.
//
// Each lookup is recorded, as the lab's DNS server records the queries it
// answers (a dns-query event: "A <name> <rcode>"), through onQuery when it
// is set: the evidence of a client's resolutions is the same for the
// reference as for a client that queries the lab's DNS.
type xdsDNS struct {
	onQuery func(trace.Event)

	mu  sync.Mutex
	ips []string
	set bool
}

// update takes a resolve step's concrete addresses per endpoint.
func (d *xdsDNS) update(eps [][]string) {
	var ips []string
	for _, ep := range eps {
		for _, a := range ep {
			if h, _, err := net.SplitHostPort(a); err == nil {
				ips = append(ips, h)
			}
		}
	}
	d.mu.Lock()
	d.ips, d.set = ips, true
	d.mu.Unlock()
}

// lookupHost is a resolver.Options.LookupHost.
func (d *xdsDNS) lookupHost(_ context.Context, host string) ([]string, error) {
	ips, err := d.answer(host)
	if d.onQuery != nil {
		rcode := "NOERROR"
		if err != nil {
			rcode = "NXDOMAIN"
		}
		d.onQuery(trace.Event{Source: trace.SourceHarness, Kind: trace.KindDNSQuery, Detail: "A " + host + " " + rcode})
	}
	return ips, err
}

// answer is what the lab DNS would answer for host.
func (d *xdsDNS) answer(host string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.set {
		return nil, errors.New("lookup " + host + ": no resolve step yet")
	}
	if len(d.ips) == 0 {
		return nil, errors.New("lookup " + host + ": no such host")
	}
	return append([]string(nil), d.ips...), nil
}

// rootPolicy splits one LoadBalancingConfig object ({"name": config}) into
// the policy's name and its config, as written.
func rootPolicy(lbConfig []byte) (name, config string, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(lbConfig, &m); err != nil {
		return "", "", err
	}
	if len(m) != 1 {
		return "", "", fmt.Errorf("LB config names %d policies, want 1", len(m))
	}
	for k, v := range m {
		name, config = k, string(v)
	}
	return name, config, nil
}

// xdsSteps are the scenario's xds steps in the order of its steps.
func xdsSteps(s *scenario.Scenario) []xds.Resources {
	var out []xds.Resources
	for _, st := range s.Steps {
		if x, ok := st.Action.(scenario.SetXDS); ok {
			out = append(out, x.Resources)
		}
	}
	return out
}

// xdsInitialRoot is the root policy of the first configuration the
// scenario's xds steps give the client, in the order of its steps: the
// simulator builds one policy per run (sim.New), and the xDS resolver's tree
// has a conform_priority root for an aggregate cluster and a
// conform_outlier_detection root otherwise.
func xdsInitialRoot(s *scenario.Scenario, env reference.Switches) (string, error) {
	a, err := newSimADS(s.Client.Listener, env, func(trace.Event) {})
	if err != nil {
		return "", err
	}
	for i, x := range xdsSteps(s) {
		res, err := xdsres.Build(s, x, xdsOptions)
		if err != nil {
			return "", err
		}
		a.setResources(xdsres.Version(x, i+1), res)
		if cfg, _, ok := a.take(); ok && cfg != nil {
			_, lb, err := xdsresolver.Build(cfg, map[string][]string{})
			if err != nil {
				return "", err
			}
			name, _, err := rootPolicy(lb)
			return name, err
		}
	}
	return "", fmt.Errorf("no xds step gives listener %q a configuration", s.Client.Listener)
}

// xdsState is the resolver state the reference xDS resolver builds for cfg
// (reference/xds/resolver): LOGICAL_DNS leaves looked up (an IP literal as
// it is; a failed lookup keeps the leaf's last answer in last), then A75's
// tree. It returns the endpoints and the tree's JSON.
func xdsState(cfg *client.Config, lookup func(context.Context, string) ([]string, error), last map[string][]string) ([]resolver.Endpoint, string, error) {
	dns := map[string][]string{}
	for _, leaf := range cfg.Leaves {
		cl := cfg.Clusters[leaf]
		if cl.Kind != client.KindLogicalDNS {
			continue
		}
		port := strconv.Itoa(int(cl.DNSPort))
		if ip := net.ParseIP(cl.DNSHost); ip != nil {
			dns[leaf] = []string{net.JoinHostPort(cl.DNSHost, port)}
			continue
		}
		ips, err := lookup(context.Background(), cl.DNSHost)
		if err != nil {
			dns[leaf] = last[leaf]
			continue
		}
		var addrs []string
		for _, ip := range ips {
			addrs = append(addrs, net.JoinHostPort(ip, port))
		}
		last[leaf], dns[leaf] = addrs, addrs
	}
	eps, lb, err := xdsresolver.Build(cfg, dns)
	return eps, string(lb), err
}
