// Package l9 is the suite for L9 (grpc-go's resolver and balancer API), as
// specs the Ginkgo suite and `conform run` both execute. Most of L9 is the
// shape of Go interfaces; the specs check what a channel built on it shows
// from outside: a service config from the resolver switching the LB policy
// gracefully (switch.go), how picks wait for a picker or fail fast
// (picks.go), and resolver updates as whole address lists (picks.go).
package l9

import (
	"fmt"
	"sort"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

// The document's section headings, as the catalogue spells them.
const (
	sectionSwap           = "Swapping out balancer"
	sectionBalancerAPI    = "Balancer API"
	sectionResolverAPI    = "The resolver API"
	sectionInitialization = "Initialization"
)

// labSlack is how far a lab timing may stray from the simulated one.
const labSlack = 100 * time.Millisecond

// Specs are the L9 specs, in document order.
func Specs() []spec.Spec {
	return []spec.Spec{
		defaultPickFirst(),
		fullList(),
		switchServiceConfig(),
		switchCDS(),
		switchReuse(),
		queueUntilPicker(),
		failFastInTF(),
	}
}

// rpcIDs are n RPC ids, prefix01 … (two digits keep them in order).
func rpcIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i+1)
	}
	return out
}

// timed is a step not yet added: the builder takes steps in time order.
type timed struct {
	at time.Duration
	a  scenario.Action
}

// addInOrder adds steps to b in time order (stable: equal times keep theirs).
func addInOrder(b *scenario.Builder, steps []timed) *scenario.Builder {
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	for _, st := range steps {
		b.At(st.at, st.a)
	}
	return b
}

// every sends ids one every period from at, with opts.
func every(at, period time.Duration, ids []string, opts ...scenario.RPCOption) []timed {
	var out []timed
	for i, id := range ids {
		out = append(out, timed{at + time.Duration(i)*period, scenario.RPC(id, opts...)})
	}
	return out
}

// backoffResultsAgreement is resultsAgreement for a run whose RPCs wait
// out a subchannel's backoff: the simulator draws its ±20 % jitter from the
// run's seed, grpc-go's subchannels in the lab from their own source, so a
// reconnection may come up to 400 ms earlier or later (1 s ± 200 ms on each
// side), and the RPC that waited for it with it.
func backoffResultsAgreement() *compare.Options {
	o := resultsAgreement()
	o.Tolerance = 400*time.Millisecond + labSlack
	return o
}

// resultsAgreement compares the RPCs' results, not who answered them
// (round_robin's first endpoint is the policy's own random choice).
func resultsAgreement() *compare.Options {
	return &compare.Options{
		Select:    []trace.Pred{trace.OfKind(trace.KindRPCResult)},
		Tolerance: labSlack,
		Ignore:    []string{"backend"},
	}
}
