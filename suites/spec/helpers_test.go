package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestRender_OneEventPerLine verifies that Render puts each event on its
// own indented line after the message, and says "(none)" for no events.
func TestRender_OneEventPerLine(t *testing.T) {
	if got := Render(nil); got != " (none)" {
		t.Errorf("Render(nil) = %q, want %q", got, " (none)")
	}
	evs := []trace.Event{
		{T: time.Millisecond, Source: trace.SourceDriver, Kind: trace.KindRPCStart, RPC: "r1"},
		{T: 2 * time.Millisecond, Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: "r1", Backend: "b1"},
	}
	got := Render(evs)
	lines := strings.Split(got, "\n")
	if len(lines) != 3 || lines[0] != "" || lines[1] != "  "+evs[0].String() || lines[2] != "  "+evs[1].String() {
		t.Errorf("Render = %q, want a line per event, each indented by two spaces", got)
	}
}
