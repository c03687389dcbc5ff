package replay

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// Inference holds the thresholds of Environment's rules.
type Inference struct {
	// Name of the scenario. Default "field".
	Name string
	// RefusedWithin: an attempt that fails sooner was refused (reset); one
	// that fails later hung (drop). Default 1 s: a refusal takes one round
	// trip, while a dropped SYN is retransmitted only after 1 s and gRPC
	// gives an attempt at least 20 s.
	RefusedWithin time.Duration
	// HungAfter: an attempt the policy abandons (shutdown, new addresses)
	// after pending this long hung (drop); sooner, nothing is inferred.
	// Default 200 ms, below A61's 250 ms Connection Attempt Delay.
	HungAfter time.Duration
	// Tail is how long the scenario runs after the last event. Default 1 s.
	Tail time.Duration
	// Addrs are the addresses (ip:port) a captured client was given, in
	// its order, for FromCapture when the capture shows no DNS answer (a
	// client configured with addresses, or resolving by a means not on the
	// wire). An address the client never tried is not on the wire: whoever
	// knows it says so here. Default: the addresses it tried.
	Addrs []string
	// QueuedWithin: a captured RPC whose request left this soon after its
	// connection was ready had waited for it (see FromCapture). Default
	// 20 ms, well above the time a client takes from a connection's
	// readiness to sending the RPCs that waited for it.
	QueuedWithin time.Duration
}

// DefaultInference is the Inference Environment uses.
var DefaultInference = Inference{Name: "field", RefusedWithin: time.Second, HungAfter: 200 * time.Millisecond, Tail: time.Second,
	QueuedWithin: 20 * time.Millisecond}

// Environment rebuilds, with DefaultInference, the environment a recorded
// client saw (see the package documentation for the rules and their
// limits). It returns the scenario and the mapping from the trace's concrete
// addresses to the scenario's symbolic ones.
func Environment(evs []trace.Event) (*scenario.Scenario, Mapping, error) {
	return DefaultInference.Environment(evs)
}

// Environment rebuilds the environment of evs with in's thresholds; zero
// fields take DefaultInference's.
func (in Inference) Environment(evs []trace.Event) (*scenario.Scenario, Mapping, error) {
	in = in.withDefaults()
	evs = slices.Clone(evs)
	slices.SortStableFunc(evs, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
	m, backends, err := mapAddresses(evs)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: environment: %w", err)
	}
	steps := faultSteps(in.observe(evs), m)
	steps = append(steps, healthSteps(evs, m)...)
	steps = append(steps, resolveSteps(evs, m)...)
	steps = append(steps, rpcSteps(evs)...)
	slices.SortStableFunc(steps, func(a, b timedAction) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.class, b.class), strings.Compare(fmt.Sprint(a.action), fmt.Sprint(b.action)))
	})
	b := scenario.New(in.Name).Describe(describe(evs, m))
	for _, be := range backends {
		b.Backend(be.Name, be.Stack)
	}
	end := time.Duration(0)
	for _, st := range steps {
		b.At(st.at, st.action)
		end = max(end, st.at)
	}
	if len(evs) > 0 {
		end = max(end, evs[len(evs)-1].T)
	}
	s, err := b.End(end + in.Tail).Build()
	if err != nil {
		return nil, nil, fmt.Errorf("replay: environment: %w", err)
	}
	return s, m, nil
}

func (in Inference) withDefaults() Inference {
	d := DefaultInference
	in.Name = cmp.Or(in.Name, d.Name)
	in.RefusedWithin = cmp.Or(in.RefusedWithin, d.RefusedWithin)
	in.HungAfter = cmp.Or(in.HungAfter, d.HungAfter)
	in.Tail = cmp.Or(in.Tail, d.Tail)
	in.QueuedWithin = cmp.Or(in.QueuedWithin, d.QueuedWithin)
	return in
}

// describe documents the address mapping and what could not be replayed.
func describe(evs []trace.Event, m Mapping) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Inferred by replay.Environment from %d recorded events.\nAddresses (symbolic = as recorded):\n%s\n", len(evs), m)
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindResolverError)) {
		fmt.Fprintf(&b, "Not replayed: resolver error at %s: %s\n", trace.FormatT(e.T), e.Err)
	}
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindHealthSet)) {
		if _, ok := m[e.Addr]; !ok {
			fmt.Fprintf(&b, "Not replayed: health status of %s (an address the client never had) at %s\n", e.Addr, trace.FormatT(e.T))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// healthSteps replays every health-set at its time, as the health step
// that sets it (a health watch's READY is SERVING, anything else
// NOT_SERVING), for the addresses the mapping has.
func healthSteps(evs []trace.Event, m Mapping) []timedAction {
	var out []timedAction
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindHealthSet)) {
		sym, ok := m[e.Addr]
		if !ok {
			continue
		}
		status := scenario.NotServing
		if e.State == "READY" {
			status = scenario.Serving
		}
		out = append(out, timedAction{at: e.T, class: 0, action: scenario.Health(sym, status).For(e.Service)})
	}
	return out
}

// resolveSteps replays every resolver update at its time, endpoint by
// endpoint, in symbolic addresses; endpoints with no address are left out.
func resolveSteps(evs []trace.Event, m Mapping) []timedAction {
	var out []timedAction
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindResolverUpdate)) {
		var eps []scenario.Endpoint
		for _, ep := range e.Endpoints {
			if len(ep) == 0 {
				continue
			}
			syms := make([]scenario.Addr, len(ep))
			for i, a := range ep {
				syms[i] = m[a]
			}
			eps = append(eps, scenario.EP(syms...))
		}
		out = append(out, timedAction{at: e.T, class: 1, action: scenario.Resolve(eps...)})
	}
	return out
}
