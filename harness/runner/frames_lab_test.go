package runner

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/conformlab/conform/harness/replay/pcap"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// TestLab_PCAPHoldsTheTracesAttempts runs a lab scenario with WithPCAP and
// reads the file back with harness/replay/pcap: it holds the connection
// attempts the trace holds (kinds, addresses, client ports, retransmits,
// the kernel's times relative to the first SYN within a millisecond), and
// its comments name the scenario and which address is which backend's.
func TestLab_PCAPHoldsTheTracesAttempts(t *testing.T) {
	requireLab(t)
	dir := t.TempDir()
	s := heDroppedIPv6()
	tr, err := Run(WithPCAP(context.Background(), dir), s, Reference, trace.ModeLab, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := PCAPPath(dir, s.Name, Reference.String())
	c, err := pcap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := attempts(trace.Select(tr.Events, trace.FromSource(trace.SourceCapture)))
	got := attempts(trace.Select(c.Events, trace.FromSource(trace.SourceCapture)))
	if len(want) < 2 || len(got) != len(want) {
		t.Fatalf("pcap has %d capture events, the trace %d (want at least the IPv6 and the IPv4 SYN):\npcap:\n%s\ntrace:\n%s",
			len(got), len(want), dump(got), dump(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Addr != w.Addr || g.Port != w.Port || g.Retransmit != w.Retransmit || (g.T-w.T).Abs() > time.Millisecond {
			t.Errorf("event %d: pcap %s, trace %s", i, g, w)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	intf, err := r.Interface(0)
	if err != nil {
		t.Fatal(err)
	}
	v6, v4 := AddrOf("b1", 0, scenario.IPv6), AddrOf("b1", 0, scenario.IPv4)
	if sec := r.SectionInfo().Comment; !strings.Contains(sec, s.Name) || !strings.Contains(sec, "reference") {
		t.Errorf("section comment %q does not name the scenario and the implementation", sec)
	}
	if !strings.Contains(intf.Comment, "b1/ipv6 = "+v6) || !strings.Contains(intf.Comment, "b1/ipv4 = "+v4) || intf.Name != "eth0" {
		t.Errorf("interface %q, comment %q: want eth0 and which address is b1/ipv4 and b1/ipv6", intf.Name, intf.Comment)
	}
}

// attempts are the SYN, SYN-ACK and RST events with times relative to the
// first.
func attempts(evs []trace.Event) []trace.Event {
	out := trace.Select(evs, trace.OfKind(trace.KindSYN, trace.KindSYNACK, trace.KindRST))
	out = append([]trace.Event(nil), out...)
	for i := len(out) - 1; i >= 0; i-- {
		out[i].T -= out[0].T
	}
	return out
}
