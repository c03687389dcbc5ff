package replay_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// outside is what a capture shows of a lab trace: its packets, DNS answers
// and RPC results, without the policy's or the harness's own events.
func outside(tr *trace.Trace) []trace.Event {
	return trace.Select(tr.Events, trace.OfKind(trace.KindSYN, trace.KindSYNACK, trace.KindRST, trace.KindDNSQuery, trace.KindRPCResult))
}

// TestFromCapture_DroppedIPv6_ReplaysItsAttempts verifies the field flow
// from a capture: the lab's golden trace of he-dropped-ipv6 seen as a
// capture gives an environment in which IPv6 drops from the start and IPv4
// answers, with the attempted addresses as the client's resolver update;
// replayed on the reference's pick_first in the simulator, it makes the
// same attempts, a Connection Attempt Delay apart, as the field did.
func TestFromCapture_DroppedIPv6_ReplaysItsAttempts(t *testing.T) {
	field, err := trace.ReadFile("../../traces/a61/he-dropped-ipv6.lab.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s, m, err := replay.FromCapture(outside(field))
	if err != nil {
		t.Fatal(err)
	}
	v6, v4 := "[fd00:c0f::b:1]:50051", "198.19.0.1:50051"
	if m[v6] == "" || m[v4] == "" {
		t.Fatalf("mapping %v lacks the attempted addresses", m)
	}
	var faults []string
	var resolved []scenario.ResolverUpdate
	for _, st := range s.Steps {
		switch a := st.Action.(type) {
		case scenario.SetFault:
			faults = append(faults, string(a.Addr)+" "+string(a.Fault)+" at "+trace.FormatT(st.At))
		case scenario.ResolverUpdate:
			resolved = append(resolved, a)
		}
	}
	if want := []string{string(m[v6]) + " drop at +0.0ms"}; !slices.Equal(faults, want) {
		t.Errorf("faults %v, want %v", faults, want)
	}
	if len(resolved) != 1 || len(resolved[0].Endpoints) != 2 || resolved[0].Endpoints[0].Addrs[0] != m[v6] {
		t.Fatalf("resolver updates %+v, want one: [%s], [%s]", resolved, m[v6], m[v4])
	}
	s.Client.LBPolicy = "pick_first"
	replayed, err := runner.Run(context.Background(), s, runner.Reference, trace.ModeSim, runner.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	syns := compare.Options{Select: []trace.Pred{trace.OfKind(trace.KindSYN), func(e trace.Event) bool { return !e.Retransmit && e.T < time.Second }},
		Ignore: []string{"peer", "port", "backend", "sc"}, Tolerance: 5 * time.Millisecond}
	// The replay's addresses are the scenario's own (b1, b2, …): compare
	// the field's attempts renamed to them.
	renamed := &trace.Trace{Events: replay.Rename(trace.Select(field.Events, trace.OfKind(trace.KindSYN)), s, m, runner.AddrOf)}
	if res := compare.Traces(renamed, replayed, syns); !res.Equal() {
		t.Errorf("the replay's attempts differ from the field's:\n%s", res)
	}
}

// TestFromCapture_RefusedAndNoAttempt verifies an attempt refused at once
// is a reset, and a capture with no attempt is an error that says so.
func TestFromCapture_RefusedAndNoAttempt(t *testing.T) {
	a := "198.18.0.10:443"
	evs := []trace.Event{
		{T: 0, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: a, Port: 40000},
		{T: time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindRST, Addr: a, Port: 40000},
	}
	s, m, err := replay.FromCapture(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got []scenario.SetFault
	for _, st := range s.Steps {
		if f, ok := st.Action.(scenario.SetFault); ok {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Addr != m[a] || got[0].Fault != scenario.Reset {
		t.Errorf("faults %+v, want %s reset", got, m[a])
	}
	if _, _, err := replay.FromCapture([]trace.Event{{Kind: trace.KindDNSQuery, Detail: "A x.example NOERROR"}}); err == nil {
		t.Error("a capture with no attempt gave an environment")
	}
}

// TestFromCapture_DropEndsBetweenLastSwallowedAndAnsweredSYN verifies a
// drop's end is placed between the last SYN it swallowed and the
// SYN-ACK of the retransmission that got through, even after an earlier attempt the
// client gave up on unanswered (evidence of the drop only until its last
// SYN, not until the end of the capture).
func TestFromCapture_DropEndsBetweenLastSwallowedAndAnsweredSYN(t *testing.T) {
	a := "[fd00:c0f::1]:443"
	syn := func(at time.Duration, port int) trace.Event {
		return trace.Event{T: at, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: a, Port: port}
	}
	evs := []trace.Event{syn(0, 40000), syn(time.Second, 40000), syn(3*time.Second, 40000), // given up at 20 s
		syn(20*time.Second, 40001), syn(21*time.Second, 40001),
		{T: 21*time.Second + time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindSYNACK, Addr: a, Port: 40001},
		{T: 30 * time.Second, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: "198.18.0.1:443", Port: 40002}}
	s, m, err := replay.FromCapture(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range s.Steps {
		switch f := st.Action.(type) {
		case scenario.SetFault:
			if f.Addr == m[a] {
				got = append(got, string(f.Fault)+" at "+trace.FormatT(st.At))
			}
		case scenario.ClearFault:
			if f.Addr == m[a] {
				got = append(got, "clear at "+trace.FormatT(st.At))
			}
		}
	}
	if want := []string{"drop at +0.0ms", "clear at +20.501s"}; !slices.Equal(got, want) {
		t.Errorf("faults of %s: %v, want %v", a, got, want)
	}
}

// TestFromCapture_DNSAnswersOneUpdatePerResolution verifies the A and
// AAAA answers for one name, a moment apart, are one resolver update at
// the later answer, with the address the client tried first, then the one
// it never tried on the port of its attempts; an answer for the name 30 s
// later is a new update.
func TestFromCapture_DNSAnswersOneUpdatePerResolution(t *testing.T) {
	v4, v6 := "198.18.0.1:443", "[fd00:c0f::1]:443"
	dns := func(at time.Duration, detail string) trace.Event {
		return trace.Event{T: at, Source: trace.SourceHarness, Kind: trace.KindDNSQuery, Peer: "198.18.0.2:5353", Detail: detail}
	}
	evs := []trace.Event{
		dns(0, "AAAA svc.example NOERROR fd00:c0f::1"),
		dns(time.Millisecond, "A svc.example NOERROR 198.18.0.1"),
		{T: 2 * time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindSYN, Addr: v4, Port: 40000},
		{T: 3 * time.Millisecond, Source: trace.SourceCapture, Kind: trace.KindSYNACK, Addr: v4, Port: 40000},
		dns(30*time.Second, "A svc.example NOERROR 198.18.0.1"),
	}
	s, m, err := replay.FromCapture(evs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range s.Steps {
		if u, ok := st.Action.(scenario.ResolverUpdate); ok {
			var eps []string
			for _, ep := range u.Endpoints {
				for _, a := range ep.Addrs {
					eps = append(eps, string(a))
				}
			}
			got = append(got, trace.FormatT(st.At)+" "+strings.Join(eps, ","))
		}
	}
	want := []string{"+1.0ms " + string(m[v4]) + "," + string(m[v6]), "+30.000s " + string(m[v4])}
	if m[v6] == "" || !slices.Equal(got, want) {
		t.Errorf("resolver updates %q, want %q (mapping %v)", got, want, m)
	}
}
