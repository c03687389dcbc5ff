package replay_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/replay/pcap"
	"github.com/conformlab/conform/harness/scenario"
)

// TestFieldBugDoc_InfersTheDocumentedScenario verifies docs/field-bug.md
// shows what the code infers: its capture, with the addresses it passes
// to --addrs, gives its field.yaml.
func TestFieldBugDoc_InfersTheDocumentedScenario(t *testing.T) {
	c, err := pcap.ReadFile("../../docs/field-bug/field.pcap")
	if err != nil {
		t.Fatal(err)
	}
	in := replay.DefaultInference
	in.Addrs = []string{"[fd00:c0f::b:1]:50051", "198.19.0.1:50051"}
	got, _, err := in.FromCapture(c.Events)
	if err != nil {
		t.Fatal(err)
	}
	got.Client.LBPolicy = "pick_first" // --lb pick_first
	want, err := scenario.DecodeFile("../../docs/field-bug/field.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/field-bug/field.yaml is not what the capture gives now (-documented +inferred):\n%s", diff)
	}
}
