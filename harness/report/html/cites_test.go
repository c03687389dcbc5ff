package html

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestCites_FindsTheEventsAFailureNames verifies which events of a trace a
// fail's evidence cites: the one an excerpt marks with ">", else every
// event whose text it names in full; never an event whose text is only a
// prefix of a named one; none when it names too many to single one out.
func TestCites_FindsTheEventsAFailureNames(t *testing.T) {
	syn := func(ms int, addr string) trace.Event {
		return trace.Event{T: time.Duration(ms) * time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: addr}
	}
	evs := []trace.Event{syn(0, "[fd00:c0f::b:1]:50051"), syn(1, "198.19.0.1:50051"), syn(1, "198.19.0.1:5005"), syn(300, "198.19.0.1:50051")}
	evs[1].Subchannel = "sc2"
	str := func(i int) string { return evs[i].String() }
	excerpt := fmt.Sprintf("Expected 250ms\nEvents:\n    %s\n  > %s\n    %s\n", str(0), str(1), str(3))
	var many []string
	for i := range 10 {
		many = append(many, syn(i, "198.19.0.9:1").String())
	}
	manyEvs := make([]trace.Event, 10)
	for i := range manyEvs {
		manyEvs[i] = syn(i, "198.19.0.9:1")
	}
	for _, c := range []struct {
		name     string
		evidence string
		evs      []trace.Event
		want     []int
	}{
		{"the marked event of an excerpt", excerpt, evs, []int{1}},
		{"events named in the text", "p1 is tried 10 s after p0; found: " + str(3) + ", and " + str(0), evs, []int{0, 3}},
		{"not a prefix of a named event", "found: " + str(1), evs, []int{1}},
		{"no event named", "Expected <string>: IDLE", evs, nil},
		{"too many to single one out", strings.Join(many, "\n"), manyEvs, nil},
	} {
		if got := cites(c.evidence, c.evs); !slices.Equal(got, c.want) {
			t.Errorf("%s: cites %v, want %v\n%s", c.name, got, c.want, c.evidence)
		}
	}
}
