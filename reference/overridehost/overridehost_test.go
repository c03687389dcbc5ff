package overridehost_test

import (
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/sim"
	"github.com/conformlab/conform/reference/internal/lbtest"
	"github.com/conformlab/conform/reference/overridehost"
)

const (
	v4a, v4b, v4c, v6a = lbtest.V4a, lbtest.V4b, lbtest.V4c, lbtest.V6a
)

// TestOverrideHost_Session_SticksToItsEndpoint verifies A55, LB Policy for
// Stateful Session Affinity, with A61, Changes to Stateful Session
// Affinity: RPCs whose cookie names an endpoint go to it while others
// follow round_robin; a cookie listing an unconnected address first is
// served by the endpoint's READY one; the actual address list reported has
// the address used first, then the endpoint's others.
func TestOverrideHost_Session_SticksToItsEndpoint(t *testing.T) {
	w := newWorld(t, config("", rrChild))
	w.AddBackend("b0", v4a, v6a)
	w.AddBackend("b1", v4b)
	resolve(t, w, ep("", "", v4a, v6a), ep("", "", v4b))
	advanceTo(w, sec)
	for i := range 4 {
		b, list := served(t, w, []string{v4b})
		lbtest.Eq(t, "session on E1", b+" "+list, "b1 "+v4b)
		b, list = served(t, w, nil)
		if list != "" {
			t.Errorf("RPC %d outside a session reported %q", i, list)
		}
		b2, _ := served(t, w, nil)
		if b == b2 {
			t.Errorf("RPCs outside a session both went to %s", b)
		}
	}
	// V6a has no subchannel (pick_first connected V4a): V4a, READY, wins.
	b, list := served(t, w, []string{v6a, v4a})
	lbtest.Eq(t, "session on E0", b+" "+list, "b0 "+v4a+","+v6a)
	// A session without a cookie yet: the child picks, the list is reported.
	b, list = served(t, w, []string{})
	if want := map[string]string{"b0": v4a + "," + v6a, "b1": v4b}[b]; list != want {
		t.Errorf("new session: %s with list %q, want %q", b, list, want)
	}
	expect(t, "created", lbtest.Created(w.Events()), at(0, v4a), at(0, v4b))
}

// TestOverrideHost_Picker_IdleSubchannelConnectsAndQueues verifies A75,
// Changes in xds_override_host LB Policy (picker): a session whose
// endpoint's subchannel is IDLE triggers its connection and queues, and is
// served on it once READY, though the child (pick_first, IDLE after the
// lost connection) was not asked.
func TestOverrideHost_Picker_IdleSubchannelConnectsAndQueues(t *testing.T) {
	w := newWorld(t, config("", pfChild))
	w.AddBackend("b0", v4a)
	w.AddBackend("b1", v4b)
	resolve(t, w, ep("", "", v4a), ep("", "", v4b))
	advanceTo(w, sec)
	w.SetFault(v4a, sim.FaultDown)
	w.SetFault(v4a, sim.FaultNone)
	advanceTo(w, 2*sec)
	id := send(w, []string{v4a})
	w.Advance(100 * ms)
	evs := w.Events()
	expect(t, "picks", picks(w, id), at(2*sec, "queued"), at(2*sec, "queued"), at(2002*ms, v4a))
	expect(t, "connects", lbtest.Connects(evs), at(0, v4a), at(2*sec, v4a))
	r := lbtest.RPCResult(t, evs, id)
	lbtest.Eq(t, "served", r.Backend+" "+r.T.String(), "b0 2.003s")
}

// TestOverrideHost_Picker_ConnectingSubchannelQueues verifies A75, Changes
// in xds_override_host LB Policy (picker): a session whose endpoint's
// subchannel is CONNECTING is queued, not sent to the READY endpoint the
// child would pick, and is served once the connection is up.
func TestOverrideHost_Picker_ConnectingSubchannelQueues(t *testing.T) {
	w := newWorld(t, config("", rrChild))
	w.AddBackend("b0", v4a)
	w.AddBackend("b1", v4b)
	w.SetFault(v4b, sim.FaultDrop)
	resolve(t, w, ep("", "", v4a), ep("", "", v4b))
	advanceTo(w, 100*ms)
	id := send(w, []string{v4b})
	advanceTo(w, 500*ms)
	w.SetFault(v4b, sim.FaultNone) // the SYN retransmitted at 1 s gets through: READY at 1.002 s
	advanceTo(w, 2*sec)
	evs := w.Events()
	expect(t, "picks", picks(w, id), at(100*ms, "queued"), at(1002*ms, v4b))
	r := lbtest.RPCResult(t, evs, id)
	lbtest.Eq(t, "served", r.Backend+" "+r.T.String()+" "+actual[id], "b1 1.003s "+v4b)
}

// TestOverrideHost_Picker_EntryWithoutSubchannelIsCreated verifies A75,
// Changes in xds_override_host LB Policy (picker): a session whose
// endpoint has no subchannel (pick_first never got past the first address)
// gets one created by the policy, connected, and is served on it.
func TestOverrideHost_Picker_EntryWithoutSubchannelIsCreated(t *testing.T) {
	w := newWorld(t, config("", pfChild))
	w.AddBackend("b0", v4a)
	w.AddBackend("b1", v4b)
	resolve(t, w, ep("", "", v4a), ep("", "", v4b))
	advanceTo(w, sec)
	id := send(w, []string{v4b})
	w.Advance(100 * ms)
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, v4a), at(sec, v4b))
	expect(t, "connects", lbtest.Connects(evs), at(0, v4a), at(sec, v4b))
	expect(t, "picks", picks(w, id), at(sec, "queued"), at(sec, "queued"), at(sec, "queued"), at(1002*ms, v4b))
	r := lbtest.RPCResult(t, evs, id)
	lbtest.Eq(t, "served", r.Backend+" "+r.T.String(), "b1 1.003s")
	// Outside the session the child's choice stands.
	b, _ := served(t, w, nil)
	lbtest.Eq(t, "outside the session", b, "b0")
}

// TestOverrideHost_EndpointMovedToLowerPriority_KeepsSessionTraffic
// verifies A75, Stateful Session Affinity Changes (the motivating case):
// under override_host, priority keeps non-session traffic on p0 when a
// session's endpoint moves to p1 (never started); the policy takes over the
// subchannel p0's round_robin dropped, and the session stays on it. A
// session on an endpoint of p1 that never had a subchannel gets one.
func TestOverrideHost_EndpointMovedToLowerPriority_KeepsSessionTraffic(t *testing.T) {
	w := newWorld(t, config("", prioChild))
	w.AddBackend("b0", v4a)
	w.AddBackend("b1", v4b)
	w.AddBackend("b2", v4c)
	resolve(t, w, ep("", "p0", v4a), ep("", "p0", v4b), ep("", "p1", v4c))
	advanceTo(w, sec)
	b, _ := served(t, w, []string{v4b})
	lbtest.Eq(t, "session before the move", b, "b1")
	advanceTo(w, 2*sec)
	resolve(t, w, ep("", "p0", v4a), ep("", "p1", v4b), ep("", "p1", v4c))
	advanceTo(w, 3*sec)
	for range 3 {
		b, list := served(t, w, []string{v4b})
		lbtest.Eq(t, "session after the move", b+" "+list, "b1 "+v4b)
		b, _ = served(t, w, nil)
		lbtest.Eq(t, "outside the session", b, "b0")
	}
	b, _ = served(t, w, []string{v4c})
	lbtest.Eq(t, "session on p1's endpoint", b, "b2")
	evs := w.Events()
	expect(t, "created", lbtest.Created(evs), at(0, v4a), at(0, v4b), at(3600*ms, v4c))
	expect(t, "shutdowns", lbtest.Shutdowns(evs))
}

// TestOverrideHost_Sweep_UnrefsOwnedSubchannelAfterIdleTimeout verifies
// A75, Changes in xds_override_host LB Policy (the sweep): a subchannel the
// policy took over is shut down by the first sweep at which its entry has
// not been used for idle_timeout (60 s), not before; the first sweep runs
// idle_timeout after the start and the next ones when the oldest use would
// expire, but never less than 5 s apart.
func TestOverrideHost_Sweep_UnrefsOwnedSubchannelAfterIdleTimeout(t *testing.T) {
	for _, c := range []struct {
		name   string
		lastAt time.Duration // the session's last RPC
		timers []lbtest.Stamped
		gone   time.Duration
	}{
		{"last use at 1 s: next sweep 5 s later", sec, []lbtest.Stamped{
			at(0, "start "+sweep+" 1m0s"), at(60*sec, "fire "+sweep), at(60*sec, "start "+sweep+" 5s"),
			at(65*sec, "fire "+sweep), at(65*sec, "start "+sweep+" 1m0s"),
		}, 65 * sec},
		{"last use at 30 s: next sweep at 90 s", 30 * sec, []lbtest.Stamped{
			at(0, "start "+sweep+" 1m0s"), at(60*sec, "fire "+sweep), at(60*sec, "start "+sweep+" 30s"),
			at(90*sec, "fire "+sweep), at(90*sec, "start "+sweep+" 1m0s"),
		}, 90 * sec},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, config(`"idleTimeout": "60s"`, prioChild))
			w.AddBackend("b0", v4a)
			w.AddBackend("b1", v4b)
			resolve(t, w, ep("", "p0", v4a), ep("", "p0", v4b))
			advanceTo(w, sec)
			send(w, []string{v4b}) // last_used_time 1 s
			advanceTo(w, 2*sec)
			resolve(t, w, ep("", "p0", v4a), ep("", "p1", v4b))
			if c.lastAt > sec {
				advanceTo(w, c.lastAt)
				b, _ := served(t, w, []string{v4b})
				lbtest.Eq(t, "session", b, "b1")
			}
			advanceTo(w, c.gone-ms)
			expect(t, "shutdowns before", lbtest.Shutdowns(w.Events()))
			advanceTo(w, c.gone+10*sec)
			evs := w.Events()
			expect(t, "shutdowns", lbtest.Shutdowns(evs), at(c.gone, v4b))
			var tm []lbtest.Stamped
			for _, s := range lbtest.Timers(evs) {
				if strings.Contains(s.What, sweep) {
					tm = append(tm, s)
				}
			}
			expect(t, "sweeps", tm, c.timers...)
		})
	}
}

const sweep = "override host sweep"

// TestOverrideHost_Draining_FilteredFromChild verifies A55, LB Policy for
// Stateful Session Affinity: DRAINING endpoints are never passed to the
// child, whatever override_host_status says; a session on one follows the
// child unless override_host_status has DRAINING, in which case it is
// served on a subchannel the policy creates.
func TestOverrideHost_Draining_FilteredFromChild(t *testing.T) {
	for _, c := range []struct {
		statuses, want string
	}{{"", "b1 " + v4b}, {`"overrideHostStatus": ["HEALTHY", "DRAINING"]`, "b0 " + v4a}} {
		t.Run(c.statuses, func(t *testing.T) {
			w := newWorld(t, config(c.statuses, rrChild))
			w.AddBackend("b0", v4a)
			w.AddBackend("b1", v4b)
			resolve(t, w, ep(overridehost.StatusDraining, "", v4a), ep(overridehost.StatusHealthy, "", v4b))
			advanceTo(w, sec)
			expect(t, "created by the child", lbtest.Created(w.Events()), at(0, v4b))
			for range 3 {
				b, _ := served(t, w, nil)
				lbtest.Eq(t, "outside a session", b, "b1")
			}
			b, list := served(t, w, []string{v4a})
			lbtest.Eq(t, "session on the DRAINING endpoint", b+" "+list, c.want)
		})
	}
}
