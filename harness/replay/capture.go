package replay

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// A field capture (harness/replay/pcap, or a lab trace without the policy's
// events) shows the client from outside: its connection attempts and their
// fate, its DNS answers, and, in clear text, its RPCs' results. From it,
// FromCapture rebuilds the environment:
//
//   - Addresses: every address a SYN went to is a backend's, and so is
//     every address a DNS answer gave, on the port the client's attempts
//     used. The A and AAAA answers for one name within a second of each
//     other are one resolver update (each address an endpoint, as the DNS
//     resolver makes them, A61), at the time of the last answer: the
//     addresses the client tried first, in the order it first tried them,
//     then the others in answer order. Which addresses belong to one
//     dual-stack backend is not known: each is a backend of its own.
//     Without a DNS answer, the client had its addresses from the start:
//     Inference.Addrs when the caller knows them, else those it tried, in
//     the order it first tried them (an address it never tried is not on
//     the wire).
//   - An attempt answered by a SYN-ACK: no fault; one refused by an RST
//     within Inference.RefusedWithin: reset; one never answered: drop, from
//     its first SYN; one answered only after retransmissions: a drop that
//     ended between the retransmission before and the one that got through.
//   - RPCs: one per rpc-result the capture decoded, sent wait-for-ready.
//     When the application sent it is not on the wire; when its request
//     left is (rpc-served), and how long after its connection was ready
//     (the connection's SYN-ACK plus one more round trip, for HTTP/2's
//     SETTINGS). A request that left more than Inference.QueuedWithin
//     after that went out on a ready connection: the RPC was sent then.
//     One that left as its connection became ready had waited for it: it
//     was sent no later than that and, since an RPC goes out at once on a
//     working connection, no earlier than the last sign of one (a request,
//     a result or a preface on another connection); it is placed at the
//     first attempt after that sign (or the capture's first attempt). An
//     RPC whose request the capture lacks is placed at the first attempt.
//     The scenario's description says, per RPC, which rule placed it.
//
// What it cannot tell, the scenario's description says: stall (an accepted
// connection that never answers HTTP/2) looks answered; the client's LB
// policy and configuration are not on the wire (the caller sets them).

// FromCapture rebuilds, with DefaultInference, the environment a client
// saw from what a capture of it shows.
func FromCapture(evs []trace.Event) (*scenario.Scenario, Mapping, error) {
	return DefaultInference.FromCapture(evs)
}

// FromCapture rebuilds the environment of a capture's events with in's
// thresholds.
func (in Inference) FromCapture(evs []trace.Event) (*scenario.Scenario, Mapping, error) {
	in = in.withDefaults()
	evs = trace.Select(evs, trace.OfKind(trace.KindSYN, trace.KindSYNACK, trace.KindRST, trace.KindDNSQuery, trace.KindRPCResult,
		trace.KindRPCServed, trace.KindPreface))
	slices.SortStableFunc(evs, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
	if len(evs) == 0 {
		return nil, nil, fmt.Errorf("replay: environment of a capture: no connection attempt, DNS answer or RPC result in it")
	}
	m, backends, updates, err := mapCaptured(evs, in.Addrs)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: environment of a capture: %w", err)
	}
	if len(m) == 0 {
		return nil, nil, fmt.Errorf("replay: environment of a capture: no connection attempt in %d events", len(evs))
	}
	steps := faultSteps(in.attemptObservations(evs), m)
	steps = append(steps, updates...)
	rpcs, rpcNotes := in.capturedRPCs(evs)
	steps = append(steps, rpcs...)
	slices.SortStableFunc(steps, func(a, b timedAction) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.class, b.class), strings.Compare(fmt.Sprint(a.action), fmt.Sprint(b.action)))
	})
	b := scenario.New(in.Name).Describe(describeCapture(evs, m, rpcNotes))
	for _, be := range backends {
		b.Backend(be.Name, be.Stack)
	}
	end := evs[len(evs)-1].T
	for _, st := range steps {
		b.At(st.at, st.action)
		end = max(end, st.at)
	}
	s, err := b.End(end + in.Tail).Build()
	if err != nil {
		return nil, nil, fmt.Errorf("replay: environment of a capture: %w", err)
	}
	return s, m, nil
}

// mapCaptured maps the addresses of the DNS answers and of the attempts,
// each on a backend of its own, and returns the DNS resolutions as resolver
// updates (class 1, as resolveSteps gives them).
func mapCaptured(evs []trace.Event, given []string) (Mapping, []scenario.Backend, []timedAction, error) {
	am := &addrMapper{m: Mapping{}}
	tried := attemptOrder(evs)
	for _, a := range given {
		if _, err := netip.ParseAddrPort(a); err != nil {
			return nil, nil, nil, fmt.Errorf("the client's addresses: %q is not ip:port", a)
		}
	}
	var updates []timedAction
	for _, r := range resolutions(evs) {
		var eps []scenario.Endpoint
		for _, a := range r.addrs(tried) {
			if _, known := am.m[a]; !known {
				if err := am.endpoint([]string{a}); err != nil {
					return nil, nil, nil, err
				}
			}
			eps = append(eps, scenario.EP(am.m[a]))
		}
		if len(eps) > 0 {
			updates = append(updates, timedAction{at: r.at, class: 1, action: scenario.Resolve(eps...)})
		}
	}
	var untold []scenario.Endpoint
	if len(updates) > 0 {
		given = nil // the DNS answers say what the client was given
	}
	for _, a := range slices.Concat(given, tried.addrs) {
		if _, known := am.m[a]; known {
			continue
		}
		if err := am.endpoint([]string{a}); err != nil {
			return nil, nil, nil, err
		}
		untold = append(untold, scenario.EP(am.m[a]))
	}
	if len(updates) == 0 && len(untold) > 0 {
		// No DNS answer in the capture: the client had its addresses
		// before it, in the order it first tried them.
		updates = append(updates, timedAction{at: 0, class: 1, action: scenario.Resolve(untold...)})
	}
	return am.m, am.backends, updates, nil
}

// tried is the addresses the client's attempts went to, in the order of
// their first SYN, with the server port of each IP.
type tried struct {
	addrs []string
	order map[string]int
	ports map[netip.Addr]uint16
}

func attemptOrder(evs []trace.Event) tried {
	t := tried{order: map[string]int{}, ports: map[netip.Addr]uint16{}}
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindSYN)) {
		if _, seen := t.order[e.Addr]; seen {
			continue
		}
		t.order[e.Addr] = len(t.addrs)
		t.addrs = append(t.addrs, e.Addr)
		if ap, err := netip.ParseAddrPort(e.Addr); err == nil {
			t.ports[ap.Addr()] = ap.Port()
		}
	}
	return t
}

// port is the server port of ip: the one its attempts went to, else the
// one port every attempt went to (a service has one); false if neither.
func (t tried) port(ip netip.Addr) (uint16, bool) {
	if p, ok := t.ports[ip]; ok {
		return p, true
	}
	var only uint16
	for _, p := range t.ports {
		if only != 0 && p != only {
			return 0, false
		}
		only = p
	}
	return only, only != 0
}

// resolutionWindow: the A and AAAA answers for one name within it of the
// first are one resolution. A DNS resolver asks for both at once and gives
// the channel one update of both (A61, the DNS resolver's addresses).
const resolutionWindow = time.Second

// resolution is one name's DNS answers, given to the client as one update.
type resolution struct {
	at      time.Duration // the last answer's
	first   time.Duration
	name    string
	answers []netip.Addr // in answer order
}

// resolutions groups the capture's DNS answers into resolutions.
func resolutions(evs []trace.Event) []*resolution {
	var out []*resolution
	open := map[string]*resolution{}
	for _, e := range trace.Select(evs, trace.OfKind(trace.KindDNSQuery)) {
		fields := strings.Fields(e.Detail)
		if len(fields) < 3 {
			continue
		}
		r := open[fields[1]]
		if r == nil || e.T-r.first > resolutionWindow {
			r = &resolution{first: e.T, name: fields[1]}
			open[fields[1]] = r
			out = append(out, r)
		}
		r.at = e.T
		for _, f := range fields[3:] {
			if ip, err := netip.ParseAddr(f); err == nil {
				r.answers = append(r.answers, ip)
			}
		}
	}
	return out
}

// addrs are the resolution's addresses as ip:port: those the client tried
// first, in the order it first tried them (the order the client's resolver
// gave them is not on the wire; its first attempts show it), then the
// others in answer order, on the port the client's attempts used. An
// address whose port cannot be told is left out.
func (r *resolution) addrs(t tried) []string {
	var out []string
	for _, ip := range r.answers {
		if p, ok := t.port(ip); ok {
			if a := netip.AddrPortFrom(ip, p).String(); !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		oa, ta := t.order[a]
		ob, tb := t.order[b]
		switch {
		case ta && tb:
			return cmp.Compare(oa, ob)
		case ta:
			return -1
		case tb:
			return 1
		}
		return 0
	})
	return out
}

// attempt is one connection attempt as the capture saw it.
type attempt struct {
	addr      string
	first     time.Duration   // the first SYN
	resent    []time.Duration // its retransmissions
	answer    *trace.Event    // the SYN-ACK or RST, if any
	answeredT time.Duration
}

// attempts groups the capture's SYNs, SYN-ACKs and RSTs by attempt (address
// and client port), in the order of their first SYN.
func attempts(evs []trace.Event) []*attempt {
	by := map[string]*attempt{}
	var out []*attempt
	for i, e := range evs {
		key := fmt.Sprintf("%s|%d", e.Addr, e.Port)
		a := by[key]
		switch {
		case e.Kind == trace.KindSYN && a == nil:
			a = &attempt{addr: e.Addr, first: e.T}
			by[key] = a
			out = append(out, a)
		case e.Kind == trace.KindSYN && a.answer == nil:
			a.resent = append(a.resent, e.T)
		case (e.Kind == trace.KindSYNACK || e.Kind == trace.KindRST) && a != nil && a.answer == nil:
			a.answer, a.answeredT = &evs[i], e.T
		}
	}
	return out
}

// attemptObservations turns the capture's attempts into observations, by
// the rules of FromCapture.
//
// The evidence of a drop is the SYNs it swallowed: an unanswered attempt
// hung until its last SYN (after that the client may have given it up,
// which the wire does not show), and one answered after retransmissions
// hung until the SYN before the one that got through.
func (in Inference) attemptObservations(evs []trace.Event) []observation {
	var obs []observation
	for _, a := range attempts(evs) {
		sent := append([]time.Duration{a.first}, a.resent...)
		switch {
		case a.answer == nil:
			obs = append(obs, observation{addr: a.addr, from: a.first, to: sent[len(sent)-1], b: hung})
		case a.answer.Kind == trace.KindRST && a.answeredT-a.first <= in.RefusedWithin:
			obs = append(obs, observation{addr: a.addr, from: a.first, to: a.answeredT, b: refused})
		case a.answer.Kind == trace.KindRST:
			obs = append(obs, observation{addr: a.addr, from: a.first, to: a.answeredT, b: hung})
		case len(a.resent) > 0:
			obs = append(obs, observation{addr: a.addr, from: a.first, to: sent[len(sent)-2], b: hung},
				observation{addr: a.addr, from: a.answeredT, to: a.answeredT, b: answered})
		default:
			obs = append(obs, observation{addr: a.addr, from: a.first, to: a.answeredT, b: answered})
		}
	}
	return obs
}

// describeCapture documents the mapping, what the capture could not show,
// and how each RPC's time was inferred.
func describeCapture(evs []trace.Event, m Mapping, rpcNotes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Inferred by replay.FromCapture from %d captured events.\nAddresses (symbolic = as captured):\n%s\n", len(evs), m)
	b.WriteString("Uncertain: which addresses are one dual-stack backend (each is its own); a stall looks answered; " +
		"the client's LB policy and configuration are not on the wire. " +
		"RPCs: the wire shows when a request left, not when the application sent it; each is placed as the evidence below allows, " +
		"and sent wait-for-ready (an RPC the capture shows reached a server, which a wait-for-ready RPC does whenever one without it does); " +
		"deadlines and RPCs that never reached a server are not on the wire.")
	for _, n := range rpcNotes {
		b.WriteString("\n" + n)
	}
	return b.String()
}

// Rename gives a field trace's events the addresses a replay of s uses:
// each address of m (in Addr, a subchannel's Addrs, a resolver update's
// Endpoints) becomes its symbolic address's concrete one under addrOf (the
// runners' address plan), so that the field trace and the replay compare
// lane by lane, subchannels by their address lists. Addresses m does not
// map are kept as they are.
func Rename(evs []trace.Event, s *scenario.Scenario, m Mapping, addrOf scenario.AddrFunc) []trace.Event {
	rename := func(a string) string {
		if sym, ok := m[a]; ok {
			if c, err := s.Concrete(sym, addrOf); err == nil {
				return c
			}
		}
		return a
	}
	out := slices.Clone(evs)
	for i, e := range out {
		out[i].Addr = rename(e.Addr)
		if e.Addrs != nil {
			out[i].Addrs = make([]string, len(e.Addrs))
			for j, a := range e.Addrs {
				out[i].Addrs[j] = rename(a)
			}
		}
		if e.Endpoints != nil {
			out[i].Endpoints = make([][]string, len(e.Endpoints))
			for j, ep := range e.Endpoints {
				out[i].Endpoints[j] = make([]string, len(ep))
				for k, a := range ep {
					out[i].Endpoints[j][k] = rename(a)
				}
			}
		}
	}
	return out
}
