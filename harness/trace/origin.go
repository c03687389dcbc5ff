package trace

import (
	"fmt"
	"slices"
	"strings"
)

// Origin says where a trace came from, and so what it can show (ISSUE 14,
// 3(c)): a suite's run, a user's scenario, a replay of a field capture, the
// capture itself, or a recorder inside a client. It is Header.Origin.
type Origin string

// The origins.
const (
	// OriginSuite: a spec of conform's suites, run by `conform run`,
	// `record`, `verify` or the Ginkgo suites.
	OriginSuite Origin = "suite"
	// OriginScenario: a user's own scenario, run by `conform try` (or the
	// lab's demo).
	OriginScenario Origin = "scenario"
	// OriginReplay: the scenario `conform replay` inferred from a field
	// capture or trace, replayed in the lab or the simulator.
	OriginReplay Origin = "replay"
	// OriginCapture: a packet capture taken on a client's host, read into
	// events (harness/replay/pcap): packets and DNS answers, and the RPCs
	// of a clear-text connection; nothing of the client's inside.
	OriginCapture Origin = "capture"
	// OriginRecorder: harness/recorder's events from inside a client (its
	// policy's events), with what else its host recorded.
	OriginRecorder Origin = "recorder"
)

// Origins are the origins, in the order above.
var Origins = []Origin{OriginSuite, OriginScenario, OriginReplay, OriginCapture, OriginRecorder}

// Known reports whether o is one of the origins.
func (o Origin) Known() bool { return slices.Contains(Origins, o) }

// Evidence is one kind of evidence a trace can carry, whoever produced it:
// what its producer observed, whether or not anything happened there. A
// kind a trace does not show is evidence missing; a kind it shows without
// events is evidence that nothing of that kind happened. Header.Shows
// lists them. (Not to be confused with Lane, an event's thread.)
type Evidence string

// The kinds of evidence.
const (
	// EvidencePackets: the client's connection attempts and their answers
	// (syn, syn-ack, rst), captured or, in the simulator, modelled.
	EvidencePackets Evidence = "packets"
	// EvidenceBackends: what the lab's backends saw (accept, preface,
	// rpc-served, conn-close).
	EvidenceBackends Evidence = "backends"
	// EvidenceResolver: the address lists the client was given
	// (resolver-update, resolver-error).
	EvidenceResolver Evidence = "resolver"
	// EvidenceDNS: the lab DNS's (or a capture's) DNS answers (dns-query).
	EvidenceDNS Evidence = "dns"
	// EvidenceChannelState: the channel's connectivity states (a driver's
	// channel-state, or the root policy's balancer-state).
	EvidenceChannelState Evidence = "channel-state"
	// EvidenceRPCs: the RPCs the run sent and their results (rpc-start,
	// rpc-result).
	EvidenceRPCs Evidence = "rpcs"
	// EvidencePolicy: the policy's own events (subchannels, timers, picks,
	// resolve-now), from the simulator or the recorder.
	EvidencePolicy Evidence = "policy"
	// EvidenceConfig: the client's LB configuration is known (the header's
	// scenario says it), so a rule that holds for one policy can be told
	// to apply.
	EvidenceConfig Evidence = "config"
	// EvidenceXDS: the xDS management server's view (xds-request).
	EvidenceXDS Evidence = "xds"
	// EvidenceStalls: the lab's stall watch ran (stall), so a timer's value can
	// be judged with the machine known steady.
	EvidenceStalls Evidence = "stalls"
)

// Evidences are the kinds of evidence, in the order above.
var Evidences = []Evidence{EvidencePackets, EvidenceBackends, EvidenceResolver, EvidenceDNS, EvidenceChannelState, EvidenceRPCs, EvidencePolicy, EvidenceConfig, EvidenceXDS, EvidenceStalls}

// Known reports whether l is one of the kinds of evidence.
func (l Evidence) Known() bool { return slices.Contains(Evidences, l) }

// evidenceAbout says what a trace without a kind of evidence cannot show, for a verdict's
// reason.
var evidenceAbout = map[Evidence]string{
	EvidencePackets:      "the client's connection attempts (no packets)",
	EvidenceBackends:     "what the backends saw",
	EvidenceResolver:     "the address lists the client was given",
	EvidenceDNS:          "DNS answers",
	EvidenceChannelState: "the channel's connectivity states",
	EvidenceRPCs:         "the RPCs and their results",
	EvidencePolicy:       "the policy's own events (its subchannels and timers)",
	EvidenceConfig:       "the client's LB configuration",
	EvidenceXDS:          "the client's xDS requests",
	EvidenceStalls:       "whether the machine stalled (no stall watch)",
}

// About says what a trace without l cannot show.
func (l Evidence) About() string {
	if s, ok := evidenceAbout[l]; ok {
		return s
	}
	return string(l)
}

// Provenance is where a trace came from and what it can show: the header's
// Origin and Shows, or, for a trace written before headers said so, what
// the rest of its header implies (InferShows).
func (h Header) Provenance() (Origin, []Evidence) {
	if len(h.Shows) > 0 {
		return h.Origin, sortEvidence(h.Shows)
	}
	return h.Origin, InferShows(h)
}

// Has reports whether a trace with header h shows evidence l (Provenance).
func (h Header) Has(l Evidence) bool {
	_, shows := h.Provenance()
	return slices.Contains(shows, l)
}

// InferShows is what a run's trace shows, from what its header says of the
// run: every run has the packets, the stimuli (address lists, RPCs), the
// channel's states and the client's config; the simulator has the policy's
// own events and no backends; a lab run has the backends, the policy's
// events when the client ran in conform's process (the reference with the
// recorder), the lab DNS's answers for a client that resolves through
// DNS, the xDS server's view for an xDS client, and stalls when the stall
// watch ran. The runner sets Shows so; a trace written before it did is
// read so.
func InferShows(h Header) []Evidence {
	shows := []Evidence{EvidencePackets, EvidenceResolver, EvidenceChannelState, EvidenceRPCs, EvidenceConfig}
	switch h.Mode {
	case ModeSim:
		shows = append(shows, EvidencePolicy)
	case ModeLab:
		shows = append(shows, EvidenceBackends)
		if h.Impl == "reference" {
			shows = append(shows, EvidencePolicy)
		}
		if slices.Contains(strings.Split(h.Env[EnvDriverCannot], ","), "resolver") {
			shows = append(shows, EvidenceDNS)
		}
		if h.Env[EnvStallWatch] != "" {
			shows = append(shows, EvidenceStalls)
		}
	}
	if h.Scenario != nil && h.Scenario.Client.Target == "xds" {
		shows = append(shows, EvidenceXDS)
	}
	return sortEvidence(shows)
}

// sortEvidence puts ls in the order of Evidences, once each.
func sortEvidence(ls []Evidence) []Evidence {
	var out []Evidence
	for _, l := range Evidences {
		if slices.Contains(ls, l) {
			out = append(out, l)
		}
	}
	return out
}

// CaptureHeader is the header of the trace of a packet capture read by
// harness/replay/pcap: origin capture, showing packets
// and DNS answers, and the RPCs of clear-text connections (rpc-result
// only: a capture does not know which RPCs the client meant to send, nor
// their wait-for-ready). It has no scenario: nothing of the client's
// configuration is known. Its mode is lab: wall time, judged to the
// tolerance of a client whose own stalls nobody watched.
func CaptureHeader() Header {
	return Header{
		Schema: SchemaVersion, Impl: "unknown (a packet capture)", Mode: ModeLab,
		Harness: HarnessVersion(), Origin: OriginCapture, Shows: []Evidence{EvidencePackets, EvidenceDNS},
	}
}

// checkProvenance reports what makes h's origin and evidence unusable.
func (h *Header) checkProvenance() error {
	if h.Origin != "" && !h.Origin.Known() {
		return fmt.Errorf("header: unknown origin %q (want one of %v)", h.Origin, Origins)
	}
	for _, l := range h.Shows {
		if !l.Known() {
			return fmt.Errorf("header: unknown evidence %q in shows (want some of %v)", l, Evidences)
		}
	}
	return nil
}
