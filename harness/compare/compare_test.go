package compare

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

var captureOnly = Options{Select: []trace.Pred{trace.FromSource(trace.SourceCapture)}}

// TestEvents_SameRunTwice_Equal verifies that two runs of one simulated
// scenario agree on every event.
func TestEvents_SameRunTwice_Equal(t *testing.T) {
	r := Events(happyEyeballs(t, "250ms"), happyEyeballs(t, "250ms"), Options{})
	if !r.Equal() {
		t.Fatalf("want equal, got:\n%s", r)
	}
	if r.Lanes < 5 || r.Events < 20 {
		t.Errorf("compared only %d events in %d lanes", r.Events, r.Lanes)
	}
}

// TestEvents_ShiftedAttemptBeyondTolerance_Shifted verifies that a second
// attempt 10 ms later than golden's diverges at the SYN to the second
// address when the tolerance is 5 ms.
func TestEvents_ShiftedAttemptBeyondTolerance_Shifted(t *testing.T) {
	o := captureOnly
	o.Tolerance = 5 * time.Millisecond
	r := Events(happyEyeballs(t, "250ms"), happyEyeballs(t, "260ms"), o)
	d := r.Divergence
	if d == nil {
		t.Fatal("want a divergence, got equal")
	}
	if d.Diff != Shifted || d.Lane != "addr:"+v6 || d.At != 250*time.Millisecond {
		t.Errorf("got %s in %s at %v, want shifted in addr:%s at 250ms", d.Diff, d.Lane, d.At, v6)
	}
	if d.Delta != 10*time.Millisecond || d.Expected.Kind != trace.KindSYN {
		t.Errorf("got delta %v on %v, want 10ms on the syn", d.Delta, d.Expected)
	}
	if want := "seen 10.0ms later than expected, beyond the tolerance of 5.0ms (default)"; !strings.Contains(r.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, r)
	}
}

// TestEvents_ShiftedAttemptWithinTolerance_Equal verifies that the same
// 10 ms shift is equal under a 20 ms tolerance, whether it comes from the
// default, the kind or the requirement.
func TestEvents_ShiftedAttemptWithinTolerance_Equal(t *testing.T) {
	golden, observed := happyEyeballs(t, "250ms"), happyEyeballs(t, "260ms")
	sel := captureOnly.Select
	for name, o := range map[string]Options{
		"default": {Select: sel, Tolerance: 20 * time.Millisecond},
		"kind": {Select: sel, KindTolerance: map[trace.Kind]time.Duration{
			trace.KindSYN: 20 * time.Millisecond, trace.KindSYNACK: 20 * time.Millisecond}},
		"requirement": {Select: sel, Requirement: &Requirement{ID: "A61-HE-DELAY", Tolerance: 20 * time.Millisecond}},
	} {
		if r := Events(golden, observed, o); !r.Equal() {
			t.Errorf("%s tolerance: want equal, got:\n%s", name, r)
		}
	}
}

// TestEvents_RequirementToleranceOverridesKind verifies the precedence of
// tolerances: the requirement's beats the kind's, which beats the default,
// and the report names the one that applied.
func TestEvents_RequirementToleranceOverridesKind(t *testing.T) {
	o := captureOnly
	o.Tolerance = time.Second
	o.KindTolerance = map[trace.Kind]time.Duration{trace.KindSYN: time.Second}
	o.Requirement = &Requirement{ID: "A61-HE-DELAY", Tolerance: time.Millisecond, Kinds: []trace.Kind{trace.KindSYN}}
	r := Events(happyEyeballs(t, "250ms"), happyEyeballs(t, "260ms"), o)
	if r.Equal() || r.Divergence.ToleranceFrom != "requirement A61-HE-DELAY" {
		t.Fatalf("want a divergence under the requirement's tolerance, got:\n%s", r)
	}
	o.Requirement.Kinds = []trace.Kind{trace.KindRST} // no longer covers syn
	if r := Events(happyEyeballs(t, "250ms"), happyEyeballs(t, "260ms"), o); !r.Equal() {
		t.Errorf("want equal under the kind's 1 s tolerance, got:\n%s", r)
	}
}

// TestEvents_MissingState_Missing verifies that a subchannel that skips
// CONNECTING diverges as a missing state in its lane.
func TestEvents_MissingState_Missing(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	i := indexOf(t, golden, kindState(trace.KindSubchannelState, "sc2", "CONNECTING"))
	r := Events(golden, without(golden, i), Options{})
	d := r.Divergence
	if d == nil || d.Diff != Missing || d.Lane != "subchannel:sc2" {
		t.Fatalf("want missing in subchannel:sc2, got:\n%s", r)
	}
	if d.Expected.State != "CONNECTING" || d.Seen.Kind != trace.KindSubchannelState || d.Seen.State != "READY" {
		t.Errorf("expected %v, seen %v", d.Expected, d.Seen)
	}
}

// TestEvents_ReorderedLane_Reordered verifies that swapping two events of
// one lane, at the same time, is a divergence although every event and
// time still matches.
func TestEvents_ReorderedLane_Reordered(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	i := indexOf(t, golden, func(e trace.Event) bool {
		return e.Kind == trace.KindSubchannelConnect && e.Subchannel == "sc2"
	})
	observed := append([]trace.Event{}, golden...)
	observed[i], observed[i+1] = observed[i+1], observed[i] // connect after CONNECTING
	r := Events(golden, observed, Options{})
	d := r.Divergence
	if d == nil || d.Diff != Reordered || d.Lane != "subchannel:sc2" {
		t.Fatalf("want reordered in subchannel:sc2, got:\n%s", r)
	}
	if d.Expected.Kind != trace.KindSubchannelConnect || d.Seen.Kind != trace.KindSubchannelState {
		t.Errorf("expected %v, seen %v", d.Expected, d.Seen)
	}
}

// TestEvents_ExtraEvent_Extra verifies that an event the golden trace lacks
// is reported as extra, at its own time.
func TestEvents_ExtraEvent_Extra(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	i := indexOf(t, golden, func(e trace.Event) bool { return e.T >= 100*time.Millisecond })
	extra := trace.Event{T: 100 * time.Millisecond, Source: trace.SourcePolicy, Kind: trace.KindResolveNow}
	r := Events(golden, inserted(golden, i, extra), Options{})
	d := r.Divergence
	if d == nil || d.Diff != Extra || d.Lane != "policy:" || d.At != 100*time.Millisecond {
		t.Fatalf("want extra in policy: at 100ms, got:\n%s", r)
	}
	if d.Seen.Kind != trace.KindResolveNow || d.Expected.Kind != trace.KindTimerFire {
		t.Errorf("expected %v, seen %v", d.Expected, d.Seen)
	}
}

// TestEvents_ChangedField_Changed verifies that events at one place in a
// lane that say different things are reported with the fields that differ.
func TestEvents_ChangedField_Changed(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	observed := append([]trace.Event{}, golden...)
	i := indexOf(t, golden, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult })
	observed[i].Backend = "b1"
	d := Events(golden, observed, Options{}).Divergence
	if d == nil || d.Diff != Changed || d.Lane != "rpc:r1" || strings.Join(d.Fields, ",") != "backend" {
		t.Fatalf("want backend changed in rpc:r1, got %+v", d)
	}
}

// TestEvents_LaneEndsEarly_Missing verifies that an observed lane cut short
// diverges at the first golden event it lacks.
func TestEvents_LaneEndsEarly_Missing(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	i := indexOf(t, golden, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult })
	r := Events(golden, without(golden, i), Options{})
	d := r.Divergence
	if d == nil || d.Diff != Missing || d.Seen != nil || d.Expected.Kind != trace.KindRPCResult {
		t.Fatalf("want the rpc-result missing at the lane's end, got:\n%s", r)
	}
	if !strings.Contains(r.String(), "(the lane has ended)") {
		t.Errorf("report does not show the lane's end:\n%s", r)
	}
}

// TestEvents_SubchannelRenumbering_Equal verifies that subchannels are
// matched by address list and creation order, not by id.
func TestEvents_SubchannelRenumbering_Equal(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	observed := renamed(golden, map[string]string{"sc1": "sc5", "sc2": "sc3"})
	if r := Events(golden, observed, Options{}); !r.Equal() {
		t.Fatalf("want equal, got:\n%s", r)
	}
}

// TestEvents_SubchannelRenumbering_ReportsBothNames verifies that a
// divergence in a renumbered lane names the lane both ways.
func TestEvents_SubchannelRenumbering_ReportsBothNames(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	observed := renamed(golden, map[string]string{"sc1": "sc5", "sc2": "sc3"})
	i := indexOf(t, observed, kindState(trace.KindSubchannelState, "sc3", "CONNECTING"))
	r := Events(golden, without(observed, i), Options{})
	d := r.Divergence
	if d == nil || d.Lane != "subchannel:sc2" || d.ObservedLane != "subchannel:sc3" {
		t.Fatalf("want lane subchannel:sc2 observed as subchannel:sc3, got:\n%s", r)
	}
	if !strings.Contains(r.String(), "lane subchannel:sc2 (observed: subchannel:sc3)") {
		t.Errorf("headline lacks both names:\n%s", r)
	}
}

// TestEvents_SubchannelForOtherAddresses_Diverges verifies that a
// subchannel created for another address list is not mapped onto a golden
// one.
func TestEvents_SubchannelForOtherAddresses_Diverges(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	observed := append([]trace.Event{}, golden...)
	i := indexOf(t, observed, func(e trace.Event) bool { return e.Kind == trace.KindSubchannelNew && e.Subchannel == "sc2" })
	observed[i].Addrs = []string{"198.18.0.99:443"}
	d := Events(golden, observed, Options{}).Divergence
	if d == nil || d.Lane != "subchannel:sc2" || d.Diff != Missing {
		t.Fatalf("want golden sc2's lane missing, got %+v", d)
	}
	if !strings.Contains(d.String(), "  seen      (no such lane)\n") {
		t.Errorf("report does not say the observed lane is absent:\n%s", d)
	}
}

// TestEvents_ClientPortsDiffer_Equal verifies that client ports, of packets
// and of peers, are never compared.
func TestEvents_ClientPortsDiffer_Equal(t *testing.T) {
	golden, observed := withPorts(happyEyeballs(t, "250ms"), 40000), withPorts(happyEyeballs(t, "250ms"), 51000)
	if r := Events(golden, observed, Options{}); !r.Equal() {
		t.Fatalf("want equal, got:\n%s", r)
	}
	observed[0].Peer = "198.18.1.2:51000" // another client host is a difference
	if r := Events(golden, observed, Options{}); r.Equal() {
		t.Error("a peer on another host compared equal")
	}
}

// withPorts gives every captured packet client port base+i and every
// event a peer on the client's host with that port, as a lab run would.
func withPorts(evs []trace.Event, base int) []trace.Event {
	out := append([]trace.Event{}, evs...)
	for i := range out {
		out[i].Peer = "198.18.1.1:" + strconv.Itoa(base+i)
		if out[i].Source == trace.SourceCapture {
			out[i].Port = base + i
		}
	}
	return out
}

// TestEvents_IgnoredFieldsDoNotDiverge verifies that fields named in Ignore
// take no part, while the others still do.
func TestEvents_IgnoredFieldsDoNotDiverge(t *testing.T) {
	golden := []trace.Event{{T: 0, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: "198.19.0.1:50051"}}
	observed := []trace.Event{{T: 0, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: "198.19.0.1:50051", Backend: "b1", Peer: "198.18.0.1:4000"}}
	if res := Events(golden, observed, Options{}); res.Equal() {
		t.Fatal("events differing in peer and backend compared equal without Ignore")
	}
	if res := Events(golden, observed, Options{Ignore: []string{"peer", "backend"}}); !res.Equal() {
		t.Errorf("with peer and backend ignored: %s", res)
	}
	observed[0].Retransmit = true
	if res := Events(golden, observed, Options{Ignore: []string{"peer", "backend"}}); res.Equal() {
		t.Error("a field not ignored (retransmit) took no part")
	}
}
