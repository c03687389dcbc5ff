package a62

import (
	"fmt"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

const sectionXDS = "`pick_first` via xDS"

// The xDS specs set GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG true (A62,
// Temporary environment variable protection): an implementation that still
// has the guard accepts the PickFirst config message only then, one that
// removed it always; the checks are about pick_first via xDS, not about the
// guard.

// xdsPickFirstLocalities: an EDS cluster whose load_balancing_policy is
// Envoy's PickFirst extension (A52, A62) and whose one priority has two
// localities, z1 = [b1, b2] and z2 = [b3]. pick_first picks the locality
// and the endpoint (A62, "pick_first via xDS"): one connection, to b1,
// the first endpoint, carries every RPC; the other localities are not
// balanced to. (Under round_robin, xds_wrr_locality would split RPCs
// between the localities first.)
func xdsPickFirstLocalities() spec.Spec {
	ids := spec.RPCIDs("r", 4)
	b := scenario.New("xds-pick-first-localities").
		Describe("xDS cluster eds1 with PickFirst (no shuffle): one priority, localities z1 = [b1, b2], z2 = [b3]; four RPCs at 1 s").
		Backend("b1", scenario.IPv4Only).
		Backend("b2", scenario.IPv4Only).
		Backend("b3", scenario.IPv4Only).
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true").
		At(0, scenario.ServeXDS(spec.XDSResources("eds1",
			[]xds.Cluster{{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.PickFirst}},
			xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{
				{Name: "z1", Weight: 1, Endpoints: []xds.Endpoint{{Addr: "b1/ipv4"}, {Addr: "b2/ipv4"}}},
				{Name: "z2", Weight: 1, Endpoints: []xds.Endpoint{{Addr: "b3/ipv4"}}},
			}}}})))
	spec.SendRPCs(b, time.Second, ids)
	s := b.FinishAfterEveryRPC().
		End(10 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A62, Section: sectionXDS,
		Labels:    []string{spec.LabelXDS},
		Scenario:  s,
		Agreement: agreement(labSlack, 0),
		Checks: []spec.Check{
			{Requirement: "A62-XDS-PICK-FIRST", Assert: expectClusterACKed},
			{Requirement: "A62-XDS-PICK-FIRST", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				for _, id := range ids {
					backend := spec.ServedBy(g, tr, id)
					g.Expect(backend).To(gomega.Equal("b1"),
						"pick_first picks the locality and the endpoint: every RPC on b1, the first endpoint (%s went to %s)", id, backend)
				}
			}},
		},
	}
}

// xdsShuffleSeed is a seed for which the simulator's shuffle of
// shuffleEndpoints, given through xDS, moves the first endpoint away from
// the head.
const xdsShuffleSeed = shuffleSeed

// xdsPickFirstShuffle: an EDS cluster whose PickFirst extension sets
// shuffle_address_list (A62, pick_first via xDS: the config message
// carries the shuffle knob, so that clients handed the same EDS resource
// spread over its endpoints), over shuffleEndpoints in one locality, two
// of them with an additional address (A61), every backend refusing. The
// Cluster is accepted, and the one pass pick_first makes tries the
// endpoints in a shuffled order, whole: for the seed the order differs
// from the resource's, and the addresses inside an endpoint keep theirs.
//
// A61's guard is set true too, for the additional addresses (see
// suites/a61).
//
// Simulator only, like shuffleRandomizesEndpoints: the order is the seed's.
func xdsPickFirstShuffle() spec.Spec {
	eps := shuffleEndpoints
	b := scenario.New("xds-pick-first-shuffle").
		Describe("xDS cluster eds1 with PickFirst, shuffle_address_list true: one locality of six endpoints (two with an additional address), every one refusing").
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true").
		Env(scenario.EnvXDSDualstackEndpoints, "true")
	var xeps []xds.Endpoint
	for _, ep := range eps {
		xeps = append(xeps, xds.Endpoint{Addr: ep.Addrs[0], AdditionalAddrs: ep.Addrs[1:]})
	}
	for i := 1; i <= 8; i++ {
		b.Backend(fmt.Sprintf("b%d", i), scenario.IPv4Only)
		b.At(0, scenario.Fault(scenario.Addr(fmt.Sprintf("b%d/ipv4", i)), scenario.Reset))
	}
	s := b.At(0, scenario.ServeXDS(spec.XDSResources("eds1",
		[]xds.Cluster{{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.PickFirst, Shuffle: true}},
		xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{
			{Name: "z1", Weight: 1, Endpoints: xeps},
		}}}}))).
		After(scenario.On("balancer-state").WithState(tf), scenario.Finish()).
		End(2 * time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A62, Section: sectionXDS,
		Labels:   []string{spec.LabelXDS},
		Scenario: s,
		Modes:    []trace.Mode{spec.Sim},
		Seed:     xdsShuffleSeed,
		Checks: []spec.Check{
			{Requirement: "A62-XDS-PICK-FIRST", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectClusterACKed(g, tr)
			}},
			{Requirement: "A62-XDS-SHUFFLE", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectClusterACKed(g, tr)
				expectShuffledWhole(g, tr, eps)
			}},
			{Requirement: "A62-SHUFFLE-RANDOM", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				expectShuffledWhole(g, tr, eps)
			}},
		},
	}
}

// expectClusterACKed checks that every answer to the Cluster was an ACK:
// a Cluster with the PickFirst extension is accepted.
func expectClusterACKed(g gomega.Gomega, tr *trace.Trace) {
	cds := trace.Select(spec.Of(tr, trace.KindXDSRequest), func(e trace.Event) bool {
		return e.TypeURL == spec.TypeCDS && e.XDS != trace.XDSSubscribe
	})
	g.ExpectWithOffset(1, cds).NotTo(gomega.BeEmpty(), "the client should answer the Cluster")
	for _, e := range cds {
		g.ExpectWithOffset(1, e.XDS).To(gomega.Equal(trace.XDSACK), "a Cluster with the PickFirst extension should be accepted: %s", e.Err)
	}
}

// expectShuffledWhole checks that the first pass tried every address of
// eps once, as whole endpoints each keeping its addresses' order, in an
// order other than the one given (for the spec's seed).
func expectShuffledWhole(g gomega.Gomega, tr *trace.Trace, eps []scenario.Endpoint) {
	got := attemptAddrs(firstPass(tr))
	g.ExpectWithOffset(1, got).To(gomega.ConsistOf(flat(tr, eps)), "one pass should try every address of the EDS resource once")
	g.ExpectWithOffset(1, endpointOrder(tr, eps, got)).NotTo(gomega.BeNil(),
		"the attempts %v should be whole endpoints, each keeping its addresses' order", got)
	g.ExpectWithOffset(1, got).NotTo(gomega.Equal(flat(tr, eps)),
		"with shuffle_address_list true, for seed %d the order should differ from the EDS resource's", tr.Header.Seed)
}
