package a61

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// faultedBackends are the backends every address of which had a fault set
// (and not cleared) at t: none of them can be connected to.
func faultedBackends(tr *trace.Trace, t time.Duration) map[string]bool {
	faulted := map[string]bool{}
	for _, e := range tr.Events {
		if e.T >= t {
			break
		}
		switch e.Kind {
		case trace.KindFaultSet:
			faulted[e.Addr] = true
		case trace.KindFaultClear:
			delete(faulted, e.Addr)
		}
	}
	out := map[string]bool{}
	s := tr.Header.Scenario
	for i, b := range s.Backends {
		all := true
		for _, fam := range b.Stack.Families() {
			all = all && faulted[runner.AddrOf(b.Name, i, fam)]
		}
		out[b.Name] = all
	}
	return out
}

// addrsOf are the concrete addresses of backend b in tr's scenario.
func addrsOf(tr *trace.Trace, b string) []string {
	s := tr.Header.Scenario
	i := s.BackendIndex(b)
	var out []string
	for _, fam := range s.Backends[i].Stack.Families() {
		out = append(out, runner.AddrOf(b, i, fam))
	}
	return out
}

// rhAllTF: ring_hash (request hash: header x-key) over b1 and b2, both
// refusing connections on every address. r1's key lands on b1: its walk
// meets b1, then b2, both failing, and r1 fails. At 1 s the update adds b3
// (up); ring_hash is in TRANSIENT_FAILURE with nothing connecting, so it
// connects one IDLE endpoint, b3, with no RPC asking. r2 at 1.5 s, its key
// on b1 (then b2, then b3), goes past the failing entries to b3.
func rhAllTF() spec.Spec {
	backends := []string{"b1", "b2", "b3"}
	two := [][]scenario.Addr{{"b1/ipv6", "b1/ipv4"}, {"b2/ipv6", "b2/ipv4"}}
	three := append(two, []scenario.Addr{"b3/ipv6", "b3/ipv4"})
	k1 := mustKey(rhBuildRing(backends, two...).KeyFor("k", nil, 0, 1))
	k2 := mustKey(rhBuildRing(backends, three...).KeyFor("k", nil, 0, 1, 2))
	eps := func(list [][]scenario.Addr) scenario.ResolverUpdate {
		var out []scenario.Endpoint
		for _, ep := range list {
			out = append(out, scenario.EP(ep...))
		}
		return scenario.Resolve(out...)
	}
	b := scenario.New("rh-all-tf").
		Describe("ring_hash (request hash: header x-key); b1 and b2 refuse on every address; the client gets [b1/ipv6, b1/ipv4], [b2/…]; r1 (x-key "+k1+": b1, then b2) at 200 ms, deadline 2 s; at 1 s [b1], [b2], [b3/ipv6, b3/ipv4] (b3 up); r2 (x-key "+k2+": b1, b2, then b3) at 1.5 s, deadline 2 s").
		Backend("b1", scenario.Dual).Backend("b2", scenario.Dual).Backend("b3", scenario.Dual).
		LB("ring_hash_experimental", `{"requestHashHeader":"x-key"}`)
	for _, a := range []scenario.Addr{"b1/ipv6", "b1/ipv4", "b2/ipv6", "b2/ipv4"} {
		b.At(0, scenario.Fault(a, scenario.Reset))
	}
	b.At(0, eps(two)).
		At(200*time.Millisecond, scenario.RPC("r1", scenario.Metadata(rhHeader, k1), scenario.Deadline(2*time.Second))).
		At(time.Second, eps(three)).
		At(1500*time.Millisecond, scenario.RPC("r2", scenario.Metadata(rhHeader, k2), scenario.Deadline(2*time.Second))).
		FinishAfterEveryRPC().
		End(5 * time.Second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionRingHash,
		Scenario: b.MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-PICKER-ALL-TF", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				start := spec.RPCStart(g, tr, "r1")
				v := rhAt(g, tr, start)
				walk := v.walk(rhKey(g, tr, "r1"))
				down := faultedBackends(tr, start)
				for _, b := range walk {
					verdict.Require(down[b], "r1's walk meets %s, which was not refusing connections", b)
				}
				r := spec.RPCResult(g, tr, "r1")
				g.Expect(r.Code).To(gomega.Equal("UNAVAILABLE"), "every entry r1 walks is in TRANSIENT_FAILURE: the pick fails (not queued until the deadline): %s %s", r.Code, r.Err)
				// Where the error names addresses, the entry the hash
				// landed on is among them.
				named := func(bs ...string) []string {
					var out []string
					for _, b := range bs {
						out = append(out, slices.DeleteFunc(addrsOf(tr, b), func(a string) bool { return !strings.Contains(r.Err, a) })...)
					}
					return out
				}
				if others := named(walk[1:]...); len(others) > 0 {
					g.Expect(named(walk[0])).NotTo(gomega.BeEmpty(), "r1 landed on %s: the failure should be that entry's, not %v's: %q", walk[0], others, r.Err)
				}
			}},
			{Requirement: "A61-RH-PROACTIVE-CONNECT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				r1 := spec.RPCResult(g, tr, "r1")
				verdict.Require(r1.Code == "UNAVAILABLE", "r1 did not fail on every endpoint (%s): ring_hash was not shown in TRANSIENT_FAILURE", r1.Code)
				r2 := spec.RPCStart(g, tr, "r2")
				upd := trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate), func(e trace.Event) bool { return e.T > r1.T && e.T < r2 })
				verdict.Require(len(upd) > 0, "no resolver update between r1's failure and r2")
				v := rhAt(g, tr, r2)
				down := faultedBackends(tr, r2)
				var idle []string
				for _, b := range v.backends {
					if !down[b] && !slices.Contains(backendsBefore(tr, upd[0].T), b) {
						idle = append(idle, b)
					}
				}
				verdict.Require(len(idle) > 0, "the update brought no new endpoint that accepts connections")
				var syns []trace.Event
				for _, b := range idle {
					for _, a := range addrsOf(tr, b) {
						syns = append(syns, trace.Select(spec.AttemptsTo(tr.Events, a), func(e trace.Event) bool { return e.T >= upd[0].T && e.T < r2 })...)
					}
				}
				g.Expect(syns).NotTo(gomega.BeEmpty(), "ring_hash in TRANSIENT_FAILURE with no endpoint CONNECTING after the update: it should connect an IDLE endpoint (%v) with no RPC asking, before r2 at %v", idle, r2)
			}},
			{Requirement: "A61-RH-PICKER", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				start := spec.RPCStart(g, tr, "r2")
				walk := rhAt(g, tr, start).walk(rhKey(g, tr, "r2"))
				down := faultedBackends(tr, start)
				verdict.Require(down[walk[0]], "r2's key lands on %s, which accepts connections", walk[0])
				want := ""
				for _, b := range walk {
					if !down[b] {
						want = b
						break
					}
				}
				verdict.Require(want != "", "every endpoint on r2's walk refuses connections")
				r := spec.RPCResult(g, tr, "r2")
				g.Expect(r.Code).To(gomega.Equal("OK"), "r2 lands on %s, in TRANSIENT_FAILURE: the pick should move on along the ring to %s: %s %s", walk[0], want, r.Code, r.Err)
				g.Expect(r.Backend).To(gomega.Equal(want), "r2 walks %v: the first entry not in TRANSIENT_FAILURE is %s", walk, want)
			}},
		},
		Agreement: firstPassSYNs(time.Second),
	}
}

// backendsBefore are the backends of the last resolver update before t.
func backendsBefore(tr *trace.Trace, t time.Duration) []string {
	upd := trace.Select(tr.Events, trace.OfKind(trace.KindResolverUpdate), func(e trace.Event) bool { return e.T < t && len(e.Endpoints) > 0 })
	if len(upd) == 0 {
		return nil
	}
	sym := tr.Header.Scenario.Symbolic(runner.AddrOf)
	var out []string
	for _, ep := range upd[len(upd)-1].Endpoints {
		b, _, _ := sym[ep[0]].Split()
		out = append(out, b)
	}
	return out
}

// rhNoTFConnect: ring_hash (request hash: header x-key) over b1, b2, b3
// (IPv4), b1 refusing. r1 at 200 ms lands on b1: b1's child connects,
// fails and reports TRANSIENT_FAILURE, and r1 goes on to the next
// endpoint. r2…r8, every 100 ms from 300 ms, land on b1 too. A61 (Ring
// Hash): the picker no longer triggers connection attempts for an entry in
// TRANSIENT_FAILURE (pick_first, sticky in TRANSIENT_FAILURE, retries on
// its own after its backoff, at least 800 ms: 1 s less 20 % jitter), so
// the picks bring no attempt to b1 before that.
func rhNoTFConnect() spec.Spec {
	backends := []string{"b1", "b2", "b3"}
	k := mustKey(rhBuildRing(backends, []scenario.Addr{"b1/ipv4"}, []scenario.Addr{"b2/ipv4"}, []scenario.Addr{"b3/ipv4"}).KeyFor("k", nil, 0))
	b := scenario.New("rh-no-tf-connect").
		Describe("ring_hash (request hash: header x-key); b1 refuses; the client gets [b1/ipv4], [b2/ipv4], [b3/ipv4]; r1 at 200 ms and r2…r8 every 100 ms from 300 ms, all with x-key "+k+" (b1's entry)").
		Backend("b1", scenario.IPv4Only).Backend("b2", scenario.IPv4Only).Backend("b3", scenario.IPv4Only).
		LB("ring_hash_experimental", `{"requestHashHeader":"x-key"}`).
		At(0, scenario.Fault("b1/ipv4", scenario.Reset)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"), scenario.EP("b2/ipv4"), scenario.EP("b3/ipv4"))).
		At(200*time.Millisecond, scenario.RPC("r1", scenario.Metadata(rhHeader, k), scenario.Deadline(2*time.Second)))
	for i := 2; i <= 8; i++ {
		b.At(time.Duration(i+1)*100*time.Millisecond, scenario.RPC(fmt.Sprintf("r%d", i), scenario.Metadata(rhHeader, k), scenario.Deadline(2*time.Second)))
	}
	b.FinishAfterEveryRPC().End(5 * time.Second)
	return spec.Spec{
		Doc: requirement.A61, Section: sectionRingHash,
		Scenario: b.MustBuild(),
		Checks: []spec.Check{
			{Requirement: "A61-RH-PICKER-NO-TF-CONNECT", Assert: func(g gomega.Gomega, tr *trace.Trace) {
				start := spec.RPCStart(g, tr, "r1")
				walk := rhAt(g, tr, start).walk(rhKey(g, tr, "r1"))
				verdict.Require(faultedBackends(tr, start)[walk[0]], "r1's key lands on %s, which accepts connections", walk[0])
				var syns []trace.Event
				for _, a := range addrsOf(tr, walk[0]) {
					syns = append(syns, spec.AttemptsTo(tr.Events, a)...)
				}
				verdict.Require(len(syns) > 0, "no connection attempt to %s: its entry never went TRANSIENT_FAILURE", walk[0])
				first := syns[0].T
				// pick_first's own retry comes a backoff later: 1 s less
				// 20 % jitter at the soonest, less the lab's slack.
				until := first + 800*time.Millisecond - spec.Within(tr, 20*time.Millisecond)
				var picksInside []string
				for i := 2; i <= 8; i++ {
					id := fmt.Sprintf("r%d", i)
					if t := spec.RPCStart(g, tr, id); t > first && t < until {
						picksInside = append(picksInside, id)
					}
				}
				verdict.Require(len(picksInside) > 0, "no RPC landed on %s while it was in TRANSIENT_FAILURE", walk[0])
				early := trace.Select(syns, func(e trace.Event) bool { return e.T > first && e.T < until })
				g.Expect(early).To(gomega.BeEmpty(), "%v landed on %s's entry while it was in TRANSIENT_FAILURE: the picker should pass over it without asking for a connection (pick_first retries after its backoff, not before %v):%s", picksInside, walk[0], until, spec.Render(early))
			}},
		},
		Agreement: firstPassSYNs(time.Second),
	}
}
