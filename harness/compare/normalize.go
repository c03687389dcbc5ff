package compare

import (
	"encoding/json"
	"net"
	"strings"

	"github.com/conformlab/conform/harness/trace"
)

// item is one event taking part in a comparison: the event as recorded (for
// the report), its lane and the key of what it says, times left out.
type item struct {
	ev   *trace.Event // in the caller's slice, not copied
	lane string
	key  string
}

// unmatchedPrefix marks an observed subchannel that no golden subchannel
// corresponds to, so its lane never meets a golden lane by accident.
const unmatchedPrefix = "observed:"

// mapSubchannels maps observed subchannel ids to golden ones. Ids differ
// between runs, so a subchannel is known by its address list and creation
// order: the k-th subchannel created for a list in one trace is the k-th
// created for the same list in the other. Observed subchannels created with
// no golden counterpart map to "observed:<id>"; ids never created (no
// subchannel-new in the trace) are compared as they are.
func mapSubchannels(golden, observed []trace.Event) map[string]string {
	byAddrs := map[string][]string{}
	for _, c := range creations(golden) {
		byAddrs[c.addrs] = append(byAddrs[c.addrs], c.id)
	}
	m := map[string]string{}
	for _, c := range creations(observed) {
		ids := byAddrs[c.addrs]
		if len(ids) == 0 {
			m[c.id] = unmatchedPrefix + c.id
			continue
		}
		m[c.id], byAddrs[c.addrs] = ids[0], ids[1:]
	}
	return m
}

type creation struct{ id, addrs string }

// creations lists the subchannels of evs in creation order.
func creations(evs []trace.Event) []creation {
	var cs []creation
	for _, e := range evs {
		if e.Kind == trace.KindSubchannelNew && e.Subchannel != "" {
			cs = append(cs, creation{e.Subchannel, strings.Join(e.Addrs, " ")})
		}
	}
	return cs
}

// byLane prepares the events of evs that o selects, grouped by lane in
// trace order; rename maps subchannel ids (nil: keep them).
func byLane(evs []trace.Event, o Options, rename map[string]string) map[string][]item {
	lanes := map[string][]item{}
	for i := range evs {
		e := &evs[i]
		if !o.selects(*e) {
			continue
		}
		n := normalize(*e, rename, o.ExactText)
		lane := trace.Lane(n)
		if lane == "" {
			continue // notes and logs: free text, nothing to match
		}
		lanes[lane] = append(lanes[lane], item{ev: e, lane: lane, key: keyOf(n, o.Ignore)})
	}
	return lanes
}

// normalize removes from e what legitimately differs between two runs of
// one scenario:
//   - the time (compared separately, within a tolerance);
//   - client ports, which are ephemeral (Port, and the port of Peer);
//   - subchannel ids, renamed to the golden trace's; a captured packet
//     loses its subchannel altogether, since the network knows only
//     addresses (a lab capture cannot name one);
//   - timer ids, which count every timer of a run: a policy's timers are
//     matched by purpose and order in their lane;
//   - the wording of Err and Detail, unless exactText: only whether they
//     are present is kept.
func normalize(e trace.Event, rename map[string]string, exactText bool) trace.Event {
	e.T, e.Port, e.TimerID = 0, 0, 0
	e.Peer = host(e.Peer)
	if id, ok := rename[e.Subchannel]; ok {
		e.Subchannel = id
	}
	if e.Source == trace.SourceCapture {
		e.Subchannel = ""
	}
	if !exactText {
		e.Err, e.Detail = present(e.Err), present(e.Detail)
	}
	return e
}

func host(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

func present(s string) string {
	if s == "" {
		return ""
	}
	return "(set)"
}

// keyOf is what a normalized event says, as a comparable string, leaving
// out the fields named in ignore (by their JSON names).
func keyOf(n trace.Event, ignore []string) string {
	b, _ := json.Marshal(n) // an Event always marshals
	if len(ignore) == 0 {
		return string(b)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for _, f := range ignore {
		delete(m, f)
	}
	b, _ = json.Marshal(m) // map keys marshal sorted: still canonical
	return string(b)
}
