package trace

import (
	"fmt"

	"github.com/conformlab/conform/harness/scenario"
)

// SchemaVersion is the version of the trace format this package reads and
// writes. A change that old readers would misread bumps it.
const SchemaVersion = 1

// Mode says how a trace was produced (DESIGN.md, "Vocabulary").
type Mode string

// The modes.
const (
	ModeSim Mode = "sim" // the simulator, virtual time
	ModeLab Mode = "lab" // the network lab, wall time
	// ModeField: a client in production, recorded by harness/recorder's
	// trace files on wall time. Its scenario describes the client, not a
	// timeline to run, and its last line may be cut short (see Read).
	ModeField Mode = "field"
)

// Header is the first line of a trace. Its first key is "schema", which no
// event has, so a header is never mistaken for an event nor one for a header.
type Header struct {
	Schema      int               `json:"schema"`
	Impl        string            `json:"impl"`                   // implementation under test ("reference", "grpc-go")
	ImplVersion string            `json:"impl_version,omitempty"` // its version ("v1.85.0")
	Mode        Mode              `json:"mode"`
	Seed        uint64            `json:"seed"`          // the run's randomness seed
	Harness     string            `json:"harness"`       // conform's version
	Env         map[string]string `json:"env,omitempty"` // facts about the machine: kernel, go, ...
	// Origin says where the trace came from (a suite, a user's scenario,
	// a replay, a capture, a recorder), Shows the kinds of evidence it can
	// show (origin.go); a trace written before they were recorded has
	// neither, and Provenance infers its evidence from the rest of the
	// header. Golden comparisons read events only, so neither counts
	// there.
	Origin   Origin             `json:"origin,omitempty"`
	Shows    []Evidence         `json:"shows,omitempty"`
	Scenario *scenario.Scenario `json:"scenario"` // the experiment, in scenario's JSON form
}

// The Header.Env keys under which a driver's hello is recorded: the
// capabilities it declared (PROTOCOL.md, "hello": can), comma-separated.
const (
	EnvDriverCan    = "driver.can"
	EnvDriverCannot = "driver.cannot"
)

// EnvStallWatch is the Header.Env key under which a lab trace says whether
// a stall watch (stall events) ran in the client's process:
// StallWatchClient when the lab's watch shared the client's process (a
// client in conform's own process: the reference, grpc-go linked in), or
// the client's driver ran one of its own and reported its stalls
// (PROTOCOL.md, "stall"), so that the client's own stalls are in the
// trace; StallWatchHarness when only conform's process was watched, and a
// driver's own stalls cannot be seen. A lab trace without it (recorded
// before the watch, or not by the lab) had no watch.
const EnvStallWatch = "lab.stall_watch"

// The values of EnvStallWatch.
const (
	StallWatchClient  = "client-process"
	StallWatchHarness = "harness-process"
)

// NewHeader is a header of the current schema for one run of s.
func NewHeader(s *scenario.Scenario, impl string, mode Mode, seed uint64) Header {
	return Header{Schema: SchemaVersion, Impl: impl, Mode: mode, Seed: seed, Harness: HarnessVersion(), Scenario: s}
}

// check reports what makes h unusable.
func (h *Header) check() error {
	switch {
	case h.Schema == 0:
		return fmt.Errorf("header: missing schema")
	case h.Schema != SchemaVersion:
		return fmt.Errorf("header: unknown schema version %d (this reader knows %d)", h.Schema, SchemaVersion)
	case h.Impl == "":
		return fmt.Errorf("header: missing impl")
	case h.Mode != ModeSim && h.Mode != ModeLab && h.Mode != ModeField:
		return fmt.Errorf("header: unknown mode %q (want sim, lab or field)", h.Mode)
	case h.Harness == "":
		return fmt.Errorf("header: missing harness version")
	case h.Scenario == nil:
		return fmt.Errorf("header: missing scenario")
	}
	return h.checkProvenance()
}

// Trace is a whole trace: the header and the events in time order.
type Trace struct {
	Header Header
	Events []Event
}
