package a61

import (
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// The xDS sections of the document, as the catalogue spells them.
const (
	sectionXDSAddrs   = "Support Multiple Addresses Per Endpoint in xDS"
	sectionLogicalDNS = "Changes to Logical DNS Clusters"
	sectionEnvGuard   = "Temporary environment variable protection"
)

// A61, Temporary environment variable protection: reading EDS's new fields
// is guarded by GRPC_EXPERIMENTAL_XDS_DUALSTACK_ENDPOINTS while the feature
// is young. With the variable unset, an implementation that still has the
// guard ignores additional_addresses and one that removed it reads them:
// both conform, so nothing can be required of that state. With the
// variable true, every implementation must read them. So every scenario
// whose EDS resources carry additional_addresses sets it true
// (scenario.EnvXDSDualstackEndpoints): its checks are about the feature,
// not about the guard.

// xdsResources is a state of the world routing every RPC to one cluster, c
// (spec.XDSResources).
func xdsResources(c xds.Cluster, las ...xds.LoadAssignment) xds.Resources {
	return spec.XDSResources(c.Name, []xds.Cluster{c}, las...)
}

// resolverOutput is the Needs of a check reading what the xDS resolver gave
// the channel (resolver-update and config-update events): only the
// reference's resolver is visible, with its policy's events; a third
// party's xDS client keeps its output inside the channel.
var resolverOutput = []trace.Source{trace.SourcePolicy}

// xdsDualStackEndpoint: an EDS endpoint with address b1/ipv6 and
// additional_addresses [b1/ipv4], behind round_robin; b1's IPv6 address
// drops SYNs. The endpoint reaches the channel as one endpoint of two
// addresses, and pick_first under round_robin does Happy Eyeballs over
// them: the IPv4 attempt one Connection Attempt Delay (250 ms) after the
// IPv6 one, and the RPC is served by b1.
func xdsDualStackEndpoint() spec.Spec {
	s := scenario.New("xds-dual-stack-endpoint").
		Describe("xDS cluster eds1 (round_robin): one endpoint b1/ipv6 with additional_addresses [b1/ipv4]; b1/ipv6 drops SYNs; r1 at 0").
		Backend("b1", scenario.Dual).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.ServeXDS(xdsResources(xds.Cluster{Name: "eds1", Type: xds.ClusterEDS},
			xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{
				{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{{Addr: "b1/ipv6", AdditionalAddrs: []scenario.Addr{"b1/ipv4"}}}},
			}}}}))).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A61, Section: sectionXDSAddrs,
		Labels:    []string{spec.LabelXDS, spec.LabelIPv6},
		Scenario:  s,
		Agreement: synAgreement,
		Checks: []spec.Check{
			{Requirement: "A61-XDS-ADDITIONAL-ADDRESSES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				v6, v4 := spec.Addr(tr, "b1/ipv6"), spec.Addr(tr, "b1/ipv4")
				us := updates(tr)
				g.Expect(us).NotTo(gomega.BeEmpty(), "the xDS resolver should give the channel its endpoints")
				g.Expect(us[0].Endpoints).To(gomega.Equal([][]string{{v6, v4}}),
					"the endpoint and its additional address should be one endpoint, address first")
			}, Needs: resolverOutput},
			{Requirement: "A61-XDS-ADDITIONAL-ADDRESSES", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				v6, v4 := spec.Addr(tr, "b1/ipv6"), spec.Addr(tr, "b1/ipv4")
				as := attempts(tr, 0)
				g.Expect(order(as)).To(gomega.Equal([]string{v6, v4}), "one pass over the endpoint's addresses, IPv6 first")
				t6, t4 := attemptsTo(tr, v6, 0), attemptsTo(tr, v4, 0)
				g.Expect(t4).NotTo(gomega.BeEmpty())
				spec.RequireSteadyMachine(tr, t6[0], t4[0], "250 ms Connection Attempt Delay")
				g.Expect(t4[0]-t6[0]).To(gomega.BeNumerically("~", 250*time.Millisecond, spec.TimerWithin(tr)),
					"the additional address is tried a Connection Attempt Delay after the first (Happy Eyeballs within the endpoint)")
				r := spec.RPCResult(g, tr, "r1")
				g.Expect(r.Backend).To(gomega.Equal("b1"), "r1 should be served by b1 over IPv4: %s", r.Err)
			}},
		},
	}
}

// xdsDualstackGuardOn: GRPC_EXPERIMENTAL_XDS_DUALSTACK_ENDPOINTS true; an
// EDS endpoint b1/ipv4 with additional_addresses [b2/ipv4] behind
// round_robin; b1 refuses connections. The guard open, the additional
// address is read (A61, Temporary environment variable protection): the
// endpoint is one endpoint of both addresses, its pick_first goes on to
// b2 when b1 refuses, and r1 is served by b2. Were the field left unread,
// the endpoint would be b1 alone and r1 would fail. (The guard's other
// state, the variable unset, cannot be checked: see above.)
func xdsDualstackGuardOn() spec.Spec {
	s := scenario.New("xds-dualstack-guard-on").
		Describe("GRPC_EXPERIMENTAL_XDS_DUALSTACK_ENDPOINTS=true; xDS cluster eds1 (round_robin): one endpoint b1/ipv4 with "+
			"additional_addresses [b2/ipv4]; b1 refuses; r1 at 0").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvXDSDualstackEndpoints, "true").
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.ServeXDS(xdsResources(xds.Cluster{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.RoundRobin},
			oneLocality("eds1", xds.Endpoint{Addr: "b1/ipv4", AdditionalAddrs: []scenario.Addr{"b2/ipv4"}})))).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(5*time.Second))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A61, Section: sectionEnvGuard,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Agreement: spec.XDSSpreadAgreement(s, labSlack),
		Checks: []spec.Check{
			{Requirement: "A61-XDS-ENV-GUARD", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ACKed(tr, spec.TypeEDS, "1")).To(gomega.BeTrue(), "the EDS resource should be ACKed:%s", spec.Render(spec.Of(tr, trace.KindXDSRequest)))
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b2"),
					"with the guard true, b2, the endpoint's additional address, should serve r1 (b1 refuses)")
			}},
			{Requirement: "A61-XDS-ENV-GUARD", Needs: []trace.Source{trace.SourcePolicy}, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				us := updates(tr)
				g.Expect(us).NotTo(gomega.BeEmpty(), "the xDS resolver should give the channel its endpoints")
				g.Expect(us[0].Endpoints).To(gomega.Equal([][]string{addrs(tr, "b1/ipv4", "b2/ipv4")}),
					"with the guard true, the additional address should be read into the same endpoint, after its address")
			}},
		},
	}
}

// xdsLogicalDNSOneEndpoint: a LOGICAL_DNS cluster with round_robin whose
// name resolves to b1 and b2. Latest revision: the addresses form one
// endpoint, under the cluster's own policy (no forced pick_first), so
// round_robin has one child and every RPC goes to b1, the first address.
func xdsLogicalDNSOneEndpoint() spec.Spec {
	ids := spec.RPCIDs("r", 4)
	b := scenario.New("xds-logical-dns-one-endpoint").
		Describe("xDS LOGICAL_DNS cluster dns1 (round_robin) whose name resolves to b1 and b2; four RPCs at 1 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"))).
		At(0, scenario.ServeXDS(xdsResources(xds.Cluster{Name: "dns1", Type: xds.ClusterLogicalDNS, DNSHost: "dns1.conform", LBPolicy: xds.RoundRobin})))
	spec.SendRPCs(b, time.Second, ids)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A61, Section: sectionLogicalDNS,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Agreement: synAgreement,
		Checks: []spec.Check{
			{Requirement: "A61-LOGICAL-DNS-ONE-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				a1, a2 := spec.Addr(tr, "b1/ipv4"), spec.Addr(tr, "b2/ipv4")
				// The resolve step (the DNS records) is one update; the
				// xDS resolver's state is the one with the config.
				cfgs := trace.Select(tr.Events, trace.OfKind(trace.KindConfigUpdate))
				g.Expect(cfgs).NotTo(gomega.BeEmpty(), "the xDS resolver should give the channel an LB config")
				us := trace.Select(updates(tr), func(e trace.Event) bool { return e.T >= cfgs[0].T })
				g.Expect(us).NotTo(gomega.BeEmpty())
				g.Expect(us[0].Endpoints).To(gomega.Equal([][]string{{a1, a2}}), "the DNS addresses should form one endpoint")
				g.Expect(cfgs[len(cfgs)-1].Detail).To(gomega.ContainSubstring("round_robin"), "the cluster's round_robin should be used")
				g.Expect(strings.Contains(cfgs[len(cfgs)-1].Detail, "pick_first")).To(gomega.BeFalse(), "no pick_first forced on the cluster")
			}, Needs: resolverOutput},
			{Requirement: "A61-LOGICAL-DNS-ONE-ENDPOINT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, id := range ids {
					r := spec.RPCResult(g, tr, id)
					g.Expect(r.Backend).To(gomega.Equal("b1"),
						"one endpoint: round_robin has one child, whose pick_first keeps to b1 (%s went to %q)", id, r.Backend)
				}
			}},
		},
	}
}
