package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestEvents_TwoLanesDiverge_ReportsEarliest verifies that of divergences
// in several lanes the earliest by time is reported, and the others
// counted.
func TestEvents_TwoLanesDiverge_ReportsEarliest(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	observed := append([]trace.Event{}, golden...)
	late := indexOf(t, observed, func(e trace.Event) bool { return e.Kind == trace.KindRPCResult })
	observed[late].Code = "UNAVAILABLE"
	early := indexOf(t, observed, func(e trace.Event) bool { return e.Kind == trace.KindTimerStart })
	observed[early].Duration = 300 * time.Millisecond
	r := Events(golden, observed, Options{})
	if r.Equal() || r.Divergence.Lane != "policy:" || r.DivergentLanes != 2 {
		t.Fatalf("want the policy lane first of 2, got:\n%s", r)
	}
	if !strings.Contains(r.String(), "(1 more lane also differ") {
		t.Errorf("report does not count the other lane:\n%s", r)
	}
}

// TestEvents_LabNoiseOutsideSelection_Equal verifies that events of sources
// left out of the selection, such as a lab's backend events, do not take
// part.
func TestEvents_LabNoiseOutsideSelection_Equal(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	accept := trace.Event{T: 251 * time.Millisecond, Source: trace.SourceBackend, Kind: trace.KindAccept,
		Addr: v6, Peer: "[fd00:c0f::1]:40000", Backend: "b0"}
	i := indexOf(t, golden, func(e trace.Event) bool { return e.T >= accept.T })
	observed := inserted(golden, i, accept)
	if r := Events(golden, observed, Options{}); r.Equal() || r.Divergence.Diff != Extra {
		t.Fatalf("with every source: want the accept extra, got:\n%s", r)
	}
	o := Options{Select: []trace.Pred{trace.FromSource(trace.SourcePolicy, trace.SourceCapture)}}
	if r := Events(golden, observed, o); !r.Equal() {
		t.Fatalf("policy and capture only: want equal, got:\n%s", r)
	}
}

// TestEvents_ErrorWording_ComparedOnlyWhenExact verifies that the wording
// of an error counts only under ExactText, while its presence always does.
func TestEvents_ErrorWording_ComparedOnlyWhenExact(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	observed := append([]trace.Event{}, golden...)
	i := indexOf(t, observed, func(e trace.Event) bool { return e.Kind == trace.KindPick && e.Err != "" })
	observed[i].Err = "no subchannel is ready yet"
	if r := Events(golden, observed, Options{}); !r.Equal() {
		t.Errorf("other wording, not exact: want equal, got:\n%s", r)
	}
	if r := Events(golden, observed, Options{ExactText: true}); r.Equal() || r.Divergence.Fields[0] != "err" {
		t.Errorf("other wording, exact: want err changed, got:\n%s", r)
	}
	observed[i].Err = ""
	if r := Events(golden, observed, Options{}); r.Equal() {
		t.Error("an error gone compared equal")
	}
}

// TestResult_String_FitsTerminal verifies the report's layout: headline,
// expected and seen, both sides' context with the divergent event marked,
// every line within Width columns.
func TestResult_String_FitsTerminal(t *testing.T) {
	golden := happyEyeballs(t, "250ms")
	i := indexOf(t, golden, kindState(trace.KindSubchannelState, "sc2", "CONNECTING"))
	out := Events(golden, without(golden, i), Options{}).String()
	for _, want := range []string{
		"first divergence at +250.0ms in lane subchannel:sc2: missing\n",
		"  expected  +250.0ms policy subchannel-state CONNECTING sc=sc2\n",
		"  seen      +252.0ms policy subchannel-state [fd00:c0f::10]:443 READY sc=sc2\n",
		"  golden    lane subchannel:sc2\n",
		"  >  +250.0ms  policy subchannel-state CONNECTING sc=sc2\n",
		"  observed  lane subchannel:sc2\n",
		"  >  +252.0ms  policy subchannel-state [fd00:c0f::10]:443 READY sc=sc2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > Width {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
}

// TestClip_LongLine_CutToWidth verifies that a line longer than Width is
// cut, with the cut marked.
func TestClip_LongLine_CutToWidth(t *testing.T) {
	got := clip(strings.Repeat("x", Width+10))
	if n := len([]rune(got)); n != Width || !strings.HasSuffix(got, "…") {
		t.Errorf("got %d columns: %q", n, got)
	}
}
