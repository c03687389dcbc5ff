package replay

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// The inference's fuzz target reads its input as a list of events, 8 bytes
// each, every byte picking from a small vocabulary of what a recorder or a
// capture writes — kinds, addresses (good and bad), subchannels, states,
// RPC ids, details — so that almost any input is a plausible trace:
//
//	byte 0: kind; 1: time step; 2: address; 3: subchannel; 4: state;
//	5: RPC id; 6: detail, error and flags; 7: a second address (endpoints,
//	a subchannel's list, a DNS answer)
var (
	fuzzKinds = []trace.Kind{
		trace.KindResolverUpdate, trace.KindSubchannelNew, trace.KindSubchannelConnect, trace.KindSubchannelAddrs,
		trace.KindSubchannelState, trace.KindSubchannelShutdown, trace.KindBalancerState, trace.KindPick,
		trace.KindRPCStart, trace.KindRPCResult, trace.KindResolverError, trace.KindHealthSet, trace.KindSYN,
		trace.KindSYNACK, trace.KindRST, trace.KindDNSQuery, trace.KindPreface, trace.KindRPCServed,
		trace.KindSubchannelHealth, trace.KindFaultSet, trace.KindExitIdle, trace.KindNote,
	}
	// fuzzAddrs are picked by fuzzAddr: mostly the good ones, so that
	// most inputs get past the address mapping.
	fuzzAddrs   = []string{"198.18.0.1:443", "198.18.0.2:443", "[fd00:c0f::1]:443", "[fd00:c0f::2]:443", "198.18.0.1:80", "10.0.0.1:65535"}
	fuzzBad     = []string{"", "not-an-address", "[::1]:0", "[fe80::1%eth0]:443", "1.2.3.4"}
	fuzzStates  = []string{"", "IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN", "bogus"}
	fuzzRPCs    = []string{"", "r1", "r2", "r 3", "r1", "p1", "r-2", "ünï", "a/b"}
	fuzzDetails = []string{"", "queued", "not ready", "dropped", "A svc NOERROR 198.18.0.1 198.18.0.2", "AAAA svc NOERROR fd00:c0f::1", "A svc unanswered", "A", "A svc NOERROR 999.1.1.1"}
	fuzzSteps   = []time.Duration{0, time.Microsecond, time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, time.Second, 3 * time.Second, 25 * time.Second}
)

// sourceOf is the source a trace gives kind k.
func sourceOf(k trace.Kind) trace.Source {
	switch k {
	case trace.KindSYN, trace.KindSYNACK, trace.KindRST:
		return trace.SourceCapture
	case trace.KindPreface, trace.KindRPCServed:
		return trace.SourceBackend
	case trace.KindRPCResult:
		return trace.SourceDriver
	case trace.KindResolverUpdate, trace.KindRPCStart, trace.KindResolverError, trace.KindHealthSet,
		trace.KindDNSQuery, trace.KindFaultSet, trace.KindExitIdle, trace.KindNote:
		return trace.SourceHarness
	}
	return trace.SourcePolicy
}

func pick[T any](xs []T, b byte) T { return xs[int(b)%len(xs)] }

// fuzzAddr is a good address for b below 240, a bad one above.
func fuzzAddr(b byte) string {
	if b >= 240 {
		return pick(fuzzBad, b)
	}
	return pick(fuzzAddrs, b)
}

// fuzzEvents turns data into events, in time order.
func fuzzEvents(data []byte) []trace.Event {
	var evs []trace.Event
	var t time.Duration
	for ; len(data) >= 8; data = data[8:] {
		b := data[:8]
		t += pick(fuzzSteps, b[1])
		k := pick(fuzzKinds, b[0])
		e := trace.Event{T: t, Kind: k, Source: sourceOf(k),
			Addr: fuzzAddr(b[2]), Subchannel: "sc" + string('0'+rune(b[3]%4)), State: pick(fuzzStates, b[4]),
			RPC: pick(fuzzRPCs, b[5]), Detail: pick(fuzzDetails, b[6]), Port: int(b[3]) % 3}
		if b[6]&0x80 != 0 {
			e.Err = "failed"
		}
		e.WaitForReady = b[6]&0x40 != 0
		second := fuzzAddr(b[7])
		switch e.Kind {
		case trace.KindResolverUpdate:
			e.Endpoints = [][]string{{e.Addr, second}, {second}, {}}[:1+int(b[7]>>6)%3]
		case trace.KindSubchannelNew, trace.KindSubchannelAddrs:
			e.Addrs = []string{e.Addr, second}[:1+int(b[7]>>6)%2]
		case trace.KindDNSQuery:
			e.Detail = "A svc NOERROR " + e.Addr + " " + second
		}
		evs = append(evs, e)
	}
	return evs
}

// FuzzInference verifies the inference never panics on any trace, and that
// every scenario it produces validates, survives its YAML form, and that
// Rename accepts its mapping.
func FuzzInference(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs := fuzzEvents(data)
		for name, infer := range map[string]func([]trace.Event) (*scenario.Scenario, Mapping, error){
			"Environment": Environment, "FromCapture": FromCapture,
		} {
			s, m, err := infer(evs)
			if err != nil {
				continue
			}
			checkInferred(t, name, s, m, evs)
		}
	})
}

func checkInferred(t *testing.T, name string, s *scenario.Scenario, m Mapping, evs []trace.Event) {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatalf("%s: the inferred scenario does not validate: %v", name, err)
	}
	out, err := scenario.Encode(s)
	if err != nil {
		t.Fatalf("%s: Encode: %v", name, err)
	}
	back, err := scenario.Decode("inferred.yaml", out)
	if err != nil {
		t.Fatalf("%s: the inferred scenario does not parse back: %v\n%s", name, err, out)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Fatalf("%s: the inferred scenario changes through YAML (-inferred +parsed):\n%s\n%s", name, diff, out)
	}
	Rename(evs, s, m, func(b string, i int, fam scenario.Family) string { return fmt.Sprintf("%s.%d.%s", b, i, fam) })
}

// fuzzSeeds are inputs that make the kinds of trace the inference is for:
// a recorder's (subchannels failing and connecting) and a capture's.
func fuzzSeeds(f *testing.F) [][]byte {
	seeds := handSeeds()
	// And every golden trace of the lab, as the events that byte form can
	// say (kinds and times; addresses from the pool by position).
	files, _ := filepath.Glob("../../traces/a61/*.lab.jsonl")
	for _, p := range files[:min(len(files), 6)] {
		tr, err := trace.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, encodeFuzz(tr.Events))
	}
	return seeds
}

func handSeeds() [][]byte {
	return [][]byte{
		// resolver update [v4a, v6a]; sc1 new, CONNECTING, TF; sc2 READY; picks.
		{0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 0, 1, 0, 0, 0, 2, 4, 1, 0, 1, 2, 0, 0, 0, 4, 5, 0, 1, 4, 0, 0, 0,
			1, 1, 1, 2, 0, 0, 0, 0, 4, 1, 1, 2, 3, 0, 0, 0, 6, 1, 0, 0, 3, 0, 0, 0, 7, 2, 1, 2, 0, 1, 0, 0, 7, 2, 0, 0, 0, 2, 1, 0},
		// a capture: DNS, SYN, RST, SYN, SYN-ACK, RPC served and result.
		{15, 0, 0, 0, 0, 0, 0, 1, 12, 1, 0, 1, 0, 0, 0, 0, 14, 2, 0, 1, 0, 0, 0, 0, 12, 1, 1, 2, 0, 0, 0, 0,
			13, 2, 1, 2, 0, 0, 0, 0, 16, 3, 1, 2, 0, 0, 0, 0, 17, 2, 1, 2, 0, 1, 0, 0, 9, 3, 1, 2, 0, 1, 0, 0},
	}
}

// encodeFuzz writes evs in the fuzz target's byte form, as far as its
// vocabulary reaches.
func encodeFuzz(evs []trace.Event) []byte {
	var out bytes.Buffer
	addrs := map[string]byte{}
	var last time.Duration
	for _, e := range evs {
		k := index(fuzzKinds, e.Kind)
		if k < 0 {
			continue
		}
		a, ok := addrs[e.Addr]
		if !ok {
			a = byte(len(addrs) % 5)
			addrs[e.Addr] = a
		}
		step := byte(0)
		for i, d := range fuzzSteps {
			if d <= e.T-last {
				step = byte(i)
			}
		}
		last = e.T
		out.Write([]byte{byte(k), step, a, 0, byte(max(index(fuzzStates, e.State), 0)), byte(max(index(fuzzRPCs, e.RPC), 0)), byte(max(index(fuzzDetails, e.Detail), 0)), a + 1})
	}
	return out.Bytes()
}

func index[T comparable](xs []T, x T) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// TestFuzzSeeds_Infer verifies the hand-made seeds make scenarios, one
// through each inference, so the fuzz target reaches past their refusals.
func TestFuzzSeeds_Infer(t *testing.T) {
	seeds := handSeeds()
	evs := fuzzEvents(seeds[0])
	s, m, err := Environment(evs)
	if err != nil {
		t.Fatalf("Environment of the recorder's seed: %v", err)
	}
	checkInferred(t, "Environment", s, m, evs)
	evs = fuzzEvents(seeds[1])
	if s, m, err = FromCapture(evs); err != nil {
		t.Fatalf("FromCapture of the capture's seed: %v", err)
	}
	checkInferred(t, "FromCapture", s, m, evs)
}
