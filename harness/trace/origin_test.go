package trace

import (
	"slices"
	"strings"
	"testing"

	"github.com/conformlab/conform/harness/scenario"
)

// TestInferShows_FromModeImplAndDriver: what a trace without Shows can
// show follows from its header: the simulator has the policy's events and
// no backends; a driver's lab run has the backends, no policy events, the
// lab DNS for a client that resolves names, the stall watch when it ran;
// an xDS client has the management server's view.
func TestInferShows_FromModeImplAndDriver(t *testing.T) {
	s := scenario.New("x").Backend("b1", scenario.IPv4Only).End(1).MustBuild()
	sim := NewHeader(s, "reference", ModeSim, 1)
	if got := InferShows(sim); !slices.Contains(got, EvidencePolicy) || slices.Contains(got, EvidenceBackends) || slices.Contains(got, EvidenceStalls) {
		t.Errorf("sim: %v", got)
	}
	lab := NewHeader(s, "grpcio", ModeLab, 1)
	lab.Env = map[string]string{EnvDriverCannot: "endpoints,resolver", EnvStallWatch: StallWatchHarness}
	want := []Evidence{EvidencePackets, EvidenceBackends, EvidenceResolver, EvidenceDNS, EvidenceChannelState, EvidenceRPCs, EvidenceConfig, EvidenceStalls}
	if got := InferShows(lab); !slices.Equal(got, want) {
		t.Errorf("a driver in the lab: %v, want %v", got, want)
	}
	x := scenario.New("x").Backend("b1", scenario.IPv4Only).XDS("svc").End(1).MustBuild()
	if got := InferShows(NewHeader(x, "reference", ModeLab, 1)); !slices.Contains(got, EvidenceXDS) || !slices.Contains(got, EvidencePolicy) {
		t.Errorf("xDS, the reference in the lab: %v", got)
	}
}

// TestHeader_OriginAndShowsRoundTripAndAreChecked: a header's origin and
// evidence are written and read back; an unknown one is refused at line 1
// with what is known; a header without them still reads.
func TestHeader_OriginAndShowsRoundTripAndAreChecked(t *testing.T) {
	s := scenario.New("x").Backend("b1", scenario.IPv4Only).End(1).MustBuild()
	h := NewHeader(s, "reference", ModeSim, 1)
	h.Origin, h.Shows = OriginReplay, []Evidence{EvidenceRPCs, EvidencePackets}
	data, err := Canonical(&Trace{Header: h})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Read("t.jsonl", strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if o, shows := tr.Header.Provenance(); o != OriginReplay || !slices.Equal(shows, []Evidence{EvidencePackets, EvidenceRPCs}) {
		t.Errorf("read back: %q %v", o, shows)
	}
	for _, c := range []struct{ from, to, says string }{
		{`"origin":"replay"`, `"origin":"dream"`, `t.jsonl:1: header: unknown origin "dream"`},
		{`"shows":["rpcs","packets"]`, `"shows":["rpcs","smell"]`, `t.jsonl:1: header: unknown evidence "smell" in shows`},
		{`"origin":"replay","shows":["rpcs","packets"],`, ``, ``},
	} {
		bad := strings.Replace(string(data), c.from, c.to, 1)
		if bad == string(data) {
			t.Fatalf("%s is not in %s", c.from, data)
		}
		_, err := Read("t.jsonl", strings.NewReader(bad))
		switch {
		case c.says == "" && err != nil:
			t.Errorf("a header without origin and shows: %v", err)
		case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
			t.Errorf("%s: %v, want %q", c.to, err, c.says)
		}
	}
}
