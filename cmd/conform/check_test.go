package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/conformlab/conform/harness/replay/pcap"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/monitor"
	"github.com/conformlab/conform/suites/spec"
)

// checkRun runs conform check with args and returns its output and exit
// status.
func checkRun(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errw bytes.Buffer
	err := run(context.Background(), append([]string{"check"}, args...), &out, &errw)
	status = exitStatus(err, false, &errw)
	return out.String(), errw.String(), status
}

// TestCheck_GoldenPassesBadFailsWithTheEvents: a golden trace passes every
// monitor that applies (exit 0); a known-bad trace fails its monitor, the
// table naming the events that break it with their times (exit 1); --json
// gives the same verdicts.
func TestCheck_GoldenPassesBadFailsWithTheEvents(t *testing.T) {
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(dir, "a62", "tf-picks-fail-fast.sim.jsonl")
	out, _, status := checkRun(t, golden)
	if status != 0 || !strings.Contains(out, "A62-STICKY-TF") || !strings.Contains(out, "sticky-tf") || strings.Contains(out, "fail (") {
		t.Errorf("a golden trace: exit %d\n%s", status, out)
	}
	for _, want := range []string{`A62-TF-PICKS +tf-picks +pass\n`, "origin not recorded", "not-applicable"} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("a golden trace's table lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad", "a62", "tf-picks-fail-fast.A62-TF-PICKS.monitor-tf-picks.sim.jsonl")
	out, _, status = checkRun(t, golden, bad)
	if status != 1 || !regexp.MustCompile(`tf-picks +fail \(deviates\)`).MatchString(out) ||
		!strings.Contains(out, "+1.0ms driver rpc-result rpc=r1 code=DEADLINE_EXCEEDED") {
		t.Errorf("a bad trace: exit %d, want 1 and the breaking events\n%s", status, out)
	}
	out, _, status = checkRun(t, "--json", bad)
	var got []checked
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	fails := 0
	for _, r := range got[0].Results {
		if r.Verdict == verdict.Fail {
			fails++
			if r.Check != "tf-picks" {
				t.Errorf("--json: %s fails the bad trace of tf-picks", r.Check)
			}
		}
	}
	if status != 1 || fails != 1 || got[0].File != bad {
		t.Errorf("--json: exit %d, %d fails, file %q", status, fails, got[0].File)
	}
}

// TestCheck_ACaptureIsJudgedOnItsPacketsOnly: a packet capture shows only
// packets and DNS: every monitor that needs more (the channel's states,
// the client's config) is inconclusive and says what is missing.
func TestCheck_ACaptureIsJudgedOnItsPacketsOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.pcapng")
	writeSYNs(t, path, "198.19.0.1", "198.19.0.2")
	out, errw, status := checkRun(t, path)
	if status != 0 {
		t.Fatalf("a capture: exit %d\n%s%s", status, out, errw)
	}
	for _, want := range []string{"from a capture; shows packets, dns", "inconclusive", "the trace does not show the channel's connectivity states", "the client's LB configuration"} {
		if !strings.Contains(out, want) {
			t.Errorf("a capture's table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("\n  %d inconclusive\n", len(monitor.All()))) {
		t.Errorf("a capture, which shows no config, was judged by a monitor:\n%s", out)
	}
}

// writeSYNs writes a pcapng of one IPv4 SYN from 198.18.0.1 to each of
// dsts, 250 ms apart.
func writeSYNs(t *testing.T, path string, dsts ...string) {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var frames []pcap.Frame
	for i, dst := range dsts {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP("198.18.0.1"), DstIP: net.ParseIP(dst)}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(40000 + i), DstPort: 50051, Seq: uint32(1000 * (i + 1)), SYN: true, Window: 65535}
		if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, tcp); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, pcap.Frame{Time: start.Add(time.Duration(i) * 250 * time.Millisecond), Data: buf.Bytes()})
	}
	if err := pcap.WriteFile(path, pcap.WriterConfig{Scenario: "test", Interface: "eth0", LinkType: layers.LinkTypeRaw}, frames); err != nil {
		t.Fatal(err)
	}
}

// TestCheck_BadInputNamesTheFileAndWhatWasExpected: a trace of an unknown
// schema version, one cut short, a file that is no trace, a truncated pcap
// and a pcap without TCP are each refused (exit 2), naming the file, the
// line or packet, and what was expected.
func TestCheck_BadInputNamesTheFileAndWhatWasExpected(t *testing.T) {
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join(dir, "a61", "he-all-refused.sim.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pcapHeader := []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0}
	for _, c := range []struct {
		name string
		data []byte
		says string
	}{
		{"v2.jsonl", bytes.Replace(golden, []byte(`"schema":1`), []byte(`"schema":2`), 1), "v2.jsonl:1: header: unknown schema version 2 (this reader knows 1)"},
		{"cut.jsonl", golden[:len(golden)/2], "the file is cut short"},
		{"scenario.jsonl", []byte(`{"name":"x","steps":[]}` + "\n"), `scenario.jsonl:1: not a trace: line 1 is a JSON object without "schema"`},
		{"binary.jsonl", []byte("\x00\x01garbage\n"), "binary.jsonl:1: header: malformed JSON"},
		{"truncated.pcap", pcapHeader[:10], "truncated.pcap: file header: truncated"},
		{"no-tcp.pcap", pcapHeader, "no-tcp.pcap: no TCP"},
	} {
		path := write(c.name, c.data)
		out, errw, status := checkRun(t, path)
		if status != 2 || !strings.Contains(errw, c.says) || out != "" {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 saying %q and no verdicts", c.name, status, errw, c.says)
		}
	}
	if _, errw, status := checkRun(t); status != 2 || !strings.Contains(errw, "name at least one trace") {
		t.Errorf("no argument: exit %d, %q", status, errw)
	}
	var ee exitError
	if err := run(context.Background(), []string{"check", "--frob"}, &bytes.Buffer{}, &bytes.Buffer{}); !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("an unknown flag: %v, want exit 2", err)
	}
}

// TestCheck_ATraceSaysWhereItCameFrom: a trace whose header records its
// origin and evidence is reported with them; a monitor needing evidence
// the trace does not show is inconclusive, naming it.
func TestCheck_ATraceSaysWhereItCameFrom(t *testing.T) {
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadFile(filepath.Join(dir, "a62", "tf-picks-fail-fast.sim.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr.Header.Origin, tr.Header.Shows = trace.OriginReplay, []trace.Evidence{trace.EvidencePackets, trace.EvidenceConfig, trace.EvidenceResolver}
	data, err := trace.Canonical(tr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "replay.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, status := checkRun(t, path)
	if status != 0 || !strings.Contains(out, "from a replay; shows packets, resolver, config") ||
		!regexp.MustCompile(`sticky-tf +inconclusive`).MatchString(out) || !strings.Contains(out, "the trace does not show the channel's connectivity states") {
		t.Errorf("a replay's trace without channel states: exit %d\n%s", status, out)
	}
}
