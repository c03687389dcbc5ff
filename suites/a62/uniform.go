package a62

import (
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/scenario/xds"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/internal/uniform"
	"github.com/conformlab/conform/suites/spec"
)

// The statistical shuffle specs: shuffleAddressList judged on many lists,
// in the lab as in the simulator. A62 (Enable random shuffling of address
// list) asks for a shuffle "at random", whose point (Background, L4 Load
// Balancing) is that clients given one list spread over it evenly: every
// order of the endpoints equally likely. One run gives the client a list
// every listPeriod, each of endpoints it has not seen, all refusing, so
// each list makes one pick_first pass whose SYNs show the order; the
// orders of many passes are judged by an exact chi-square test
// (suites/internal/uniform) at a false-fail probability of at most
// shuffleAlpha, stated with the sample size in the catalogue.
//
// Why fresh lists: a list the client has seen before can meet subchannels
// it kept. grpc-js keeps a subchannel its pick_first let go in the
// channel's pool, where one that was refused still reconnects once its
// backoff ends (seen in the lab ~1 s after its list was replaced), and its
// pick_first skips a subchannel it finds in backoff: a list given again
// within a few seconds would be tried in part, or not at all.
//
// Every pass is read from the capture (passes.go): the sample is in the
// trace, so a verdict is repeatable from it, and the simulator's run is the
// spec's seed's. A check is never retried until it passes.

const (
	// shuffleAlpha bounds the probability that a client that shuffles
	// uniformly fails a statistical check.
	shuffleAlpha = 1e-6
	// shuffleSamples is how many usable passes a uniformity check judges,
	// the first ones in timeline order: the sample size at which the test
	// rejects, whatever the sample, a client that never shuffles and one
	// that reaches at most half the orders of three endpoints
	// (TestShuffleTests_RejectTheKnownBadShuffles). shuffleLists lists are
	// sent, the rest to spare for passes a loaded machine leaves unusable.
	shuffleSamples = 48
	shuffleLists   = 56
	// orderSamples of orderLists are what an order check judges: every
	// usable pass must keep the list's order, which a client that keeps
	// it cannot fail by chance.
	orderSamples = 16
	orderLists   = 20
	// listPeriod is the time between lists: a pass over three refused
	// endpoints takes a few milliseconds (the reference's and grpc-go's
	// 4–10 ms at the median, grpc-js's up to ~35 ms on the loaded 2-CPU
	// lab machine), and a list given before the pass is over cuts it
	// short, leaving it unusable. At 40 ms a full `conform run` beside
	// other lab work left the reference only 42 and 47 usable passes of
	// 56: inconclusive, never wrong, but a loaded machine must not decide
	// a verdict, so the period leaves a pass room for the scheduler.
	listPeriod = 100 * time.Millisecond
	listTail   = 200 * time.Millisecond
)

// shuffleTests are the uniformity tests for lists of two and of three
// endpoints: over their 2 and 6 orders.
var shuffleTests = map[int]uniform.Test{
	2: uniform.MustNew(2, shuffleSamples, shuffleAlpha),
	3: uniform.MustNew(6, shuffleSamples, shuffleAlpha),
}

// listAt is when list k (from 0) is given.
func listAt(k int) time.Duration { return listPeriod * time.Duration(k+1) }

// freshLists adds lists fresh lists to b's timeline: list k, at listAt(k),
// is n endpoints on backends of its own, b{k·n+1} … b{k·n+n}, IPv4 only,
// each refusing from half a period before its list; give makes the step
// that gives a list to the client.
func freshLists(b *scenario.Builder, n, lists int, give func([]scenario.Addr) scenario.Action) *scenario.Builder {
	for k := range lists {
		addrs := make([]scenario.Addr, n)
		for j := range addrs {
			name := fmt.Sprintf("b%d", k*n+j+1)
			b.Backend(name, scenario.IPv4Only)
			addrs[j] = scenario.Addr(name + "/ipv4")
			b.At(listAt(k)-listPeriod/2, scenario.Fault(addrs[j], scenario.Reset))
		}
		b.At(listAt(k), give(addrs))
	}
	return b
}

// freshListsRun is a scenario of freshLists alone, ending listTail after
// the last list.
func freshListsRun(b *scenario.Builder, n, lists int, give func([]scenario.Addr) scenario.Action) *scenario.Scenario {
	return freshLists(b, n, lists, give).End(listAt(lists-1) + listTail).MustBuild()
}

// resolveList gives a list as a resolver update of one-address endpoints.
func resolveList(addrs []scenario.Addr) scenario.Action {
	eps := make([]scenario.Endpoint, len(addrs))
	for i, a := range addrs {
		eps[i] = scenario.EP(a)
	}
	return scenario.Resolve(eps...)
}

// shuffleUniform: shuffleAddressList true over shuffleLists fresh lists of
// n refusing endpoints. A client that shuffles tries them in orders a
// uniform shuffle gives (A62-SHUFFLE-UNIFORM); one without shuffling takes
// the config and keeps every list's order (A62-SHUFFLE-UNSUPPORTED-IGNORED).
func shuffleUniform(n int) spec.Spec {
	b := scenario.New(fmt.Sprintf("shuffle-uniform-%d", n)).
		Describe(fmt.Sprintf("shuffleAddressList true; %d fresh lists of %d endpoints, one every %v, every endpoint refusing", shuffleLists, n, listPeriod)).
		LB("pick_first", `{"shuffleAddressList": true}`).
		Env(scenario.EnvPickFirstLBConfig, "true")
	return spec.Spec{
		Doc: requirement.A62, Section: sectionShuffle,
		Scenario: freshListsRun(b, n, shuffleLists, resolveList),
		Checks:   []spec.Check{uniformOrders("A62-SHUFFLE-UNIFORM", n, nil), knobIgnored()},
	}
}

// shuffleOffEveryList: shuffleAddressList false (or absent, config {}) over
// orderLists fresh lists of three refusing endpoints: every pass keeps its
// list's order.
func shuffleOffEveryList(name, config, what string) spec.Spec {
	b := scenario.New(name).
		Describe(fmt.Sprintf("%s; %d fresh lists of three endpoints, one every %v, every endpoint refusing", what, orderLists, listPeriod)).
		LB("pick_first", config)
	return spec.Spec{
		Doc: requirement.A62, Section: sectionShuffle,
		Scenario: freshListsRun(b, 3, orderLists, resolveList),
		Checks: []spec.Check{{Requirement: "A62-SHUFFLE-OFF-KEEPS-ORDER", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			expectEveryPassInOrder(g, tr, orderSamples)
		}}},
	}
}

// xdsShuffleUniform: an EDS cluster whose PickFirst extension sets
// shuffle_address_list (A62, `pick_first` via xDS), given shuffleLists
// fresh versions of its one locality of three refusing endpoints: pick_first
// shuffles each as shuffleAddressList does, uniformly.
//
// Refused connections look the same whatever policy makes them, so a last
// version shows which one ran: two endpoints that accept (p1, p2) and four
// RPCs once both could be connected. pick_first sends them all to one;
// round_robin, which a client that cannot read the PickFirst extension may
// fall back to, spreads them. The orders say something of pick_first's
// shuffle only when pick_first ran.
func xdsShuffleUniform() spec.Spec {
	b := scenario.New("xds-pick-first-shuffle-uniform").
		Describe(fmt.Sprintf("xDS cluster eds1 with PickFirst, shuffle_address_list true; %d fresh EDS versions of one locality of three endpoints, one every %v, every endpoint refusing; "+
			"then a version of two endpoints that accept, and four RPCs", shuffleLists, listPeriod)).
		XDS(spec.XDSListener).
		Env(scenario.EnvPickFirstLBConfig, "true")
	give := func(addrs []scenario.Addr) scenario.Action {
		eps := make([]xds.Endpoint, len(addrs))
		for i, a := range addrs {
			eps[i] = xds.Endpoint{Addr: a}
		}
		return scenario.ServeXDS(spec.XDSResources("eds1",
			[]xds.Cluster{{Name: "eds1", Type: xds.ClusterEDS, LBPolicy: xds.PickFirst, Shuffle: true}},
			xds.LoadAssignment{Cluster: "eds1", Priorities: []xds.Priority{{Localities: []xds.Locality{
				{Name: "z1", Weight: 1, Endpoints: eps},
			}}}}))
	}
	freshLists(b, 3, shuffleLists, give)
	probe := listAt(shuffleLists)
	b.Backend("p1", scenario.IPv4Only).Backend("p2", scenario.IPv4Only).
		At(probe, give([]scenario.Addr{"p1/ipv4", "p2/ipv4"}))
	spec.SendRPCs(b, probe+probeDelay, probeRPCs)
	// The run ends at the last result, whichever RPC's it is: ending at
	// r4's cancels an r3 still in flight.
	s := b.After(scenario.On("rpc-result").Times(len(probeRPCs)), scenario.Finish()).
		End(probe + probeDelay + 3*time.Second).
		MustBuild()
	return spec.Spec{
		Doc: requirement.A62, Section: sectionXDS,
		Labels:   []string{spec.LabelXDS},
		Scenario: s,
		Checks: []spec.Check{uniformOrders("A62-XDS-SHUFFLE", 3, func(tr *trace.Trace) {
			verdict.Require(clusterACKed(tr), "the Cluster with the PickFirst extension was not ACKed every time: "+
				"whether pick_first runs at all is A62-XDS-PICK-FIRST's to judge")
			backends, ok := probeServedBy(tr)
			verdict.Require(ok && len(backends) == 1, "the last version's RPCs (answered by %v) were not all answered by one backend: "+
				"the cluster's policy did not act as pick_first, which A62-XDS-PICK-FIRST judges, and the refused connections say nothing of its shuffle", backends)
		})},
	}
}

// The probe of xdsShuffleUniform: its RPCs, sent probeDelay after the last
// version, time enough for both its endpoints to be connected.
var probeRPCs = spec.RPCIDs("r", 4)

const probeDelay = 300 * time.Millisecond

// probeServedBy lists the backends that answered the probe's RPCs, once
// each; ok is false when one has no result or failed.
func probeServedBy(tr *trace.Trace) (backends []string, ok bool) {
	for _, id := range probeRPCs {
		rs := trace.Select(tr.Events, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult && e.RPC == id })
		if len(rs) != 1 || (rs[0].Code != "" && rs[0].Code != "OK") {
			return backends, false
		}
		if !slices.Contains(backends, rs[0].Backend) {
			backends = append(backends, rs[0].Backend)
		}
	}
	return backends, true
}

// uniformOrders checks that the orders of the first shuffleSamples usable
// passes over lists of n endpoints are those of a uniform shuffle:
// shuffleTests[n] does not reject them. pre states further preconditions.
// Every pass in the order given is no sign of shuffling at all: a fail of
// kind absent.
func uniformOrders(req string, n int, pre func(*trace.Trace)) spec.Check {
	test := shuffleTests[n]
	return spec.Check{Requirement: req, Assert: func(g gomega.Gomega, tr *trace.Trace) {
		if pre != nil {
			pre(tr)
		}
		lists := listsOf(tr)
		orders, skipped := usable(lists, passesOf(tr, lists))
		verdict.Require(len(orders) >= test.Samples,
			"%d of the %d lists gave a usable pass (every endpoint tried once, one at a time, each after the one before was refused, as a pick_first pass over refusing endpoints goes), and the test judges %d: %s",
			len(orders), len(lists), test.Samples, skipped)
		counts := make([]int, test.Classes)
		for _, o := range orders[:test.Samples] {
			counts[orderIndex(o)]++
		}
		sample := test.Describe(orderNames(n), counts)
		if counts[0] == test.Samples {
			verdict.NoSign("every one of %d passes tried the endpoints in the order given (%s): no sign of shuffling", test.Samples, sample)
		}
		if test.Rejects(counts) {
			// Division by k·N keeps the integer statistic's order, so X²
			// is at or above the critical value exactly when Stat is.
			g.Expect(test.ChiSquare(counts)).To(gomega.BeNumerically("<", test.CriticalChiSquare()),
				"the orders of the first %d usable passes (by list positions) are not those of a uniform shuffle: %s; the test: %s",
				test.Samples, sample, test)
		}
	}}
}

// shuffleTrueOneList: shuffleAddressList true over one list of five
// refusing endpoints. The config is taken and every address tried once
// (A62-SHUFFLE-CONFIG); a client without shuffling keeps the order
// (A62-SHUFFLE-UNSUPPORTED-IGNORED). One pass is little evidence of not
// shuffling, but it is what a client whose driver cannot give a second
// list (one resolving through DNS) can show, and it judges a client that
// makes no new pass for a new list (grpc-go before A61 waits out its
// backoff), which shuffle-uniform-2 and -3 leave inconclusive.
func shuffleTrueOneList() spec.Spec {
	eps := singles(5)
	return spec.Spec{
		Doc: requirement.A62, Section: sectionShuffle,
		Scenario: refusingPass("shuffle-true-one-list",
			"shuffleAddressList true; five endpoints, every one refusing", `{"shuffleAddressList": true}`, 5, eps...),
		Checks: []spec.Check{
			{Requirement: "A62-SHUFFLE-CONFIG", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				g.Expect(attemptAddrs(firstPass(tr))).To(gomega.ConsistOf(flat(tr, eps)),
					"a config carrying shuffleAddressList true should be accepted and every address tried once")
			}},
			knobIgnoredOver(1),
		},
	}
}

// knobIgnored is knobIgnoredOver(orderSamples), for the many-list specs.
func knobIgnored() spec.Check { return knobIgnoredOver(orderSamples) }

// knobIgnoredOver checks A62-SHUFFLE-UNSUPPORTED-IGNORED in a run whose
// config sets shuffleAddressList: the config is taken (some list is
// tried), and a client without shuffling keeps the order of every list,
// of at least least usable passes. The second half is for clients outside
// the shuffling rules' scope (their driver does not declare shuffle); the
// catalogue keeps the others away from this requirement, but the
// reference, which shuffles and is never out of scope, is judged on the
// first half only.
func knobIgnoredOver(least int) spec.Check {
	return spec.Check{Requirement: "A62-SHUFFLE-UNSUPPORTED-IGNORED", Assert: func(g gomega.Gomega, tr *trace.Trace) {
		var addrs []string
		for _, l := range listsOf(tr) {
			addrs = append(addrs, l.addrs...)
		}
		if !slices.ContainsFunc(spec.Attempts(tr.Events), func(e trace.Event) bool { return slices.Contains(addrs, e.Addr) }) {
			verdict.NoSign("no list was tried: the config carrying shuffleAddressList was not taken")
		}
		if shuffles(tr) {
			return
		}
		expectEveryPassInOrder(g, tr, least)
	}}
}

// shuffles reports whether the run's implementation is in the scope of the
// rules for clients that shuffle: the reference, or a client whose driver
// declares shuffle (the catalogue's scope of A62-SHUFFLE-UNIFORM).
func shuffles(tr *trace.Trace) bool {
	return verdict.OutOfScope("A62-SHUFFLE-UNIFORM", tr.Header) == ""
}

// expectEveryPassInOrder checks that every usable pass, of at least
// least, tried its list in the order given.
func expectEveryPassInOrder(g gomega.Gomega, tr *trace.Trace, least int) {
	spec.RequireScenarioOrder(tr)
	lists := listsOf(tr)
	passes := passesOf(tr, lists)
	orders, skipped := usable(lists, passes)
	verdict.Require(len(orders) >= least,
		"%d of the %d lists gave a usable pass (every endpoint tried once, one at a time, each after the one before was refused), and the check judges at least %d: %s",
		len(orders), len(lists), least, skipped)
	names := orderNames(len(lists[0].addrs))
	for i, p := range passes {
		if p.why == "" && !inOrder(p.order) {
			g.Expect(names[orderIndex(p.order)]).To(gomega.Equal(names[0]),
				"list %d (at %s) was tried in the order %s of the positions it gave, not in its own", i+1, trace.FormatT(lists[i].at), names[orderIndex(p.order)])
		}
	}
}

// clusterACKed reports whether the client answered the Cluster, and every
// answer was an ACK.
func clusterACKed(tr *trace.Trace) bool {
	cds := trace.Select(spec.Of(tr, trace.KindXDSRequest), func(e trace.Event) bool {
		return e.TypeURL == spec.TypeCDS && e.XDS != trace.XDSSubscribe
	})
	return len(cds) > 0 && !slices.ContainsFunc(cds, func(e trace.Event) bool { return e.XDS != trace.XDSACK })
}
