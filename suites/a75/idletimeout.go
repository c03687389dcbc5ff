package a75

import (
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// A75, "Reading the idle_timeout field in CDS": one spec per case of the
// rule, table-driven. An accepted case is the only version the server
// sends: the Cluster is ACKed and the idle_timeout the client uses shows
// as the first xds_override_host sweep, idle_timeout after the config
// arrived. A NACK case is the second version, after a valid one (round_robin
// over b1 and b2, idle_timeout 45 s): the Cluster is NACKed, with an error
// detail in any wording (the documents prescribe none), and the first
// version keeps serving (the rejected version also switches the cluster to
// pick_first, which would keep every RPC on one backend).

// defaultIdleTimeout is A75's default.
const defaultIdleTimeout = time.Hour

// maxDurationSeconds is the largest seconds of a google.protobuf.Duration.
const maxDurationSeconds = 315576000000

// sweepTimer is the purpose of the reference's xds_override_host sweep
// timer (reference/overridehost).
const sweepTimer = "override host sweep"

// idleCase is one case of the rule.
type idleCase struct {
	name, describe string
	upstream       *xds.UpstreamConfig // nil: no upstream_config
	// want is the idle_timeout the client should use (accepted cases);
	// nack marks a case whose Cluster should be NACKed.
	want time.Duration
	nack bool
	reqs []string // the requirements the case checks
}

func httpOpts(common bool, d *xds.Duration) *xds.UpstreamConfig {
	return &xds.UpstreamConfig{HTTPProtocolOptions: &xds.HTTPProtocolOptions{Common: common, IdleTimeout: d}}
}

var idleCases = []idleCase{
	{name: "idle-timeout-no-upstream-config", describe: "no upstream_config",
		want: defaultIdleTimeout, reqs: []string{"A75-IDLE-TIMEOUT-NO-UPSTREAM-CFG", "A75-IDLE-TIMEOUT-DEFAULT-1H"}},
	{name: "idle-timeout-not-http-options", describe: "upstream_config holding a google.protobuf.Empty",
		upstream: &xds.UpstreamConfig{TypeURL: "type.googleapis.com/google.protobuf.Empty"},
		nack:     true, reqs: []string{"A75-IDLE-TIMEOUT-NOT-HTTP-OPTS-NACK"}},
	{name: "idle-timeout-no-common-options", describe: "HttpProtocolOptions without common_http_protocol_options",
		upstream: httpOpts(false, nil),
		want:     defaultIdleTimeout, reqs: []string{"A75-IDLE-TIMEOUT-NO-COMMON-OPTS", "A75-IDLE-TIMEOUT-DEFAULT-1H"}},
	{name: "idle-timeout-unset", describe: "common_http_protocol_options without idle_timeout",
		upstream: httpOpts(true, nil),
		want:     defaultIdleTimeout, reqs: []string{"A75-IDLE-TIMEOUT-UNSET-DEFAULT", "A75-IDLE-TIMEOUT-DEFAULT-1H"}},
	{name: "idle-timeout-seconds-negative", describe: "idle_timeout seconds -1",
		upstream: httpOpts(true, &xds.Duration{Seconds: -1}),
		nack:     true, reqs: []string{"A75-IDLE-TIMEOUT-SECONDS-RANGE-NACK"}},
	{name: "idle-timeout-seconds-too-large", describe: "idle_timeout seconds 315576000001",
		upstream: httpOpts(true, &xds.Duration{Seconds: maxDurationSeconds + 1}),
		nack:     true, reqs: []string{"A75-IDLE-TIMEOUT-SECONDS-RANGE-NACK"}},
	{name: "idle-timeout-nanos-negative", describe: "idle_timeout nanos -1",
		upstream: httpOpts(true, &xds.Duration{Seconds: 30, Nanos: -1}),
		nack:     true, reqs: []string{"A75-IDLE-TIMEOUT-NANOS-RANGE-NACK"}},
	{name: "idle-timeout-nanos-too-large", describe: "idle_timeout nanos 1000000000",
		upstream: httpOpts(true, &xds.Duration{Seconds: 30, Nanos: 1000000000}),
		nack:     true, reqs: []string{"A75-IDLE-TIMEOUT-NANOS-RANGE-NACK"}},
	{name: "idle-timeout-valid", describe: "idle_timeout 12.5 s",
		upstream: httpOpts(true, &xds.Duration{Seconds: 12, Nanos: 500000000}),
		want:     12500 * time.Millisecond, reqs: []string{"A75-IDLE-TIMEOUT-VALID-USED", "A75-IDLE-TIMEOUT-IN-CDS-UPDATE"}},
	{name: "idle-timeout-zero", describe: "idle_timeout 0 s",
		upstream: httpOpts(true, &xds.Duration{}),
		want:     0, reqs: []string{"A75-IDLE-TIMEOUT-VALID-USED"}},
	{name: "idle-timeout-largest", describe: "idle_timeout 315576000000.999999999 s, the largest valid",
		upstream: httpOpts(true, &xds.Duration{Seconds: maxDurationSeconds, Nanos: 999999999}),
		want:     -1, reqs: []string{"A75-IDLE-TIMEOUT-VALID-USED"}},
}

// idleTimeoutSpecs are the specs of idleCases.
func idleTimeoutSpecs() []spec.Spec {
	out := make([]spec.Spec, 0, len(idleCases))
	for _, c := range idleCases {
		if c.nack {
			out = append(out, idleNACK(c))
		} else {
			out = append(out, idleAccepted(c))
		}
	}
	return out
}

// idleCluster is eds1 with lb and upstream.
func idleCluster(lb string, upstream *xds.UpstreamConfig) xds.Cluster {
	c := eds("eds1", lb)
	c.UpstreamConfig = upstream
	return c
}

// valueOnly are the requirements of accepted cases that say which
// idle_timeout is used, and nothing of accepting the Cluster: the ACK is no
// evidence of them, and the value shows only in the reference's sweep timer.
var valueOnly = map[string]bool{"A75-IDLE-TIMEOUT-DEFAULT-1H": true, "A75-IDLE-TIMEOUT-IN-CDS-UPDATE": true}

// idleAccepted: the case's Cluster is the only version; an RPC is served.
func idleAccepted(c idleCase) spec.Spec {
	b := scenario.New(c.name).
		Describe("eds1 (round_robin: b1) with "+c.describe+"; r1 at 1 s").
		Backend("b1", scenario.IPv4Only).
		XDS(spec.XDSListener).
		At(0, scenario.ServeXDS(spec.XDSResources("eds1", []xds.Cluster{idleCluster("", c.upstream)}, assignment("eds1", addrs("b1/ipv4")))))
	spec.SendRPCs(b, time.Second, []string{"r1"})
	s := b.AfterDelay(scenario.On("rpc-result").WithRPC("r1"), time.Second, scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
	var checks []spec.Check
	for _, id := range c.reqs {
		id := id
		if !valueOnly[id] {
			checks = append(checks, spec.Check{Requirement: id, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectACK(g, tr, spec.TypeCDS, "1")
				g.Expect(spec.ServedBy(g, tr, "r1")).To(gomega.Equal("b1"), "the accepted cluster should serve r1")
			}})
		}
		checks = append(checks,
			spec.Check{Requirement: id, Needs: policyEvents, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				sweeps := trace.Select(tr.Events, trace.OfKind(trace.KindTimerStart), func(e trace.Event) bool { return e.Timer == sweepTimer })
				g.Expect(sweeps).NotTo(gomega.BeEmpty(), "xds_override_host should time its first sweep")
				want := c.want
				if want < 0 { // the largest valid Duration is beyond Go's: it saturates
					want = time.Duration(1<<63 - 1)
				}
				g.Expect(sweeps[0].Duration).To(gomega.Equal(want),
					"the first sweep should come idle_timeout (%s) after the config arrived", want)
			}},
		)
	}
	return spec.Spec{
		Doc: requirement.A75, Section: sectionIdleTimeout,
		Scenario:  s,
		Agreement: agreement(s),
		Checks:    checks,
	}
}

// idleNACK: a valid first version (round_robin over b1 and b2,
// idle_timeout 45 s), four RPCs; then the case's Cluster (switching to
// pick_first as well), NACKed; four more RPCs, still spread over b1 and b2.
//
// The client runs with pick_first through xDS switched on
// (GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG, A62's temporary guard): a client
// still behind the guard would NACK the second Cluster for its LB policy,
// hiding its answer to the idle_timeout (grpc-js-xds 1.14 keeps the guard,
// off by default).
func idleNACK(c idleCase) spec.Spec {
	first, second := spec.RPCIDs("r", 4), spec.RPCIDs("s", 4)
	las := assignment("eds1", addrs("b1/ipv4", "b2/ipv4"))
	valid := httpOpts(true, &xds.Duration{Seconds: 45})
	b := scenario.New(c.name).
		Describe("eds1 (round_robin: b1, b2; idle_timeout 45 s); four RPCs at 1 s; at 2 s eds1 becomes pick_first with "+
			c.describe+"; four RPCs at 3 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true").
		At(0, scenario.ServeXDS(spec.XDSResources("eds1", []xds.Cluster{idleCluster(xds.RoundRobin, valid)}, las)))
	spec.SendRPCs(b, time.Second, first)
	b.At(2*time.Second, scenario.ServeXDS(spec.XDSResources("eds1", []xds.Cluster{idleCluster(xds.PickFirst, c.upstream)}, las)))
	spec.SendRPCs(b, 3*time.Second, second)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	var checks []spec.Check
	for _, id := range c.reqs {
		checks = append(checks,
			spec.Check{Requirement: id, Name: "NACKed", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(spec.ACKed(tr, spec.TypeCDS, "1")).To(gomega.BeTrue(), "the valid first Cluster should be ACKed:%s", spec.Render(spec.Of(tr, trace.KindXDSRequest)))
				nacks := spec.XDSRequests(tr, spec.TypeCDS, trace.XDSNACK)
				if len(nacks) == 0 {
					verdict.NoSign("the Cluster with %s was never NACKed:%s", c.describe, spec.Render(spec.Of(tr, trace.KindXDSRequest)))
				}
				for _, n := range nacks { // a client may NACK again, on a re-subscription
					g.Expect(n.Version).To(gomega.Equal("1"), "every NACK should carry the last version accepted:%s", spec.Render(nacks))
					g.Expect(n.Err).NotTo(gomega.BeEmpty(), "every NACK should carry an error detail (got %q):%s", n.Err, spec.Render(nacks))
				}
				g.Expect(spec.ACKed(tr, spec.TypeCDS, "2")).To(gomega.BeFalse(), "the second Cluster should not be ACKed")
			}},
			spec.Check{Requirement: id, Name: "first version kept", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				verdict.Require(len(spec.XDSRequests(tr, spec.TypeCDS, trace.XDSNACK)) > 0,
					"version 2 was not NACKed: what the client served after it follows from that, which the NACK check judges")
				g.Expect(spec.ServedByEach(g, tr, first...)).To(gomega.ConsistOf("b1", "b2", "b1", "b2"), "the first version's round_robin")
				g.Expect(spec.ServedByEach(g, tr, second...)).To(gomega.ConsistOf("b1", "b2", "b1", "b2"),
					"after the NACK the first version's round_robin should keep serving (the rejected one names pick_first)")
			}},
			spec.Check{Requirement: id, Needs: needsTree, Assert: func(g gomega.Gomega, tr *trace.Trace) {
				nack := spec.XDSRequests(tr, spec.TypeCDS, trace.XDSNACK)
				g.Expect(nack).NotTo(gomega.BeEmpty())
				later := trace.Select(configs(tr), func(e trace.Event) bool { return e.T >= nack[0].T })
				g.Expect(later).To(gomega.BeEmpty(), "a NACKed Cluster should not change the channel's LB config")
			}},
		)
	}
	return spec.Spec{
		Doc: requirement.A75, Section: sectionIdleTimeout,
		Scenario:  s,
		Agreement: spreadAgreement(s),
		Checks:    checks,
	}
}
