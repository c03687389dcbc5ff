package pcap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/dns/dnsmessage"
)

// fieldCapture is a little of everything: DNS, an unanswered IPv6
// attempt, its retransmission, an IPv4 attempt carrying an RPC, stamped
// to the nanosecond.
func fieldCapture(tb testing.TB, link layers.LinkType) *builder {
	b := newBuilder(tb, link)
	q := ap(client4, 33000)
	b.udp(0, q, dns4, dnsQueryMsg(tb, 7, "svc.conform.", dnsmessage.TypeAAAA))
	b.udp(3*time.Microsecond+7, dns4, q, dnsAnswerMsg(tb, 7, "svc.conform.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, server6))
	b.tcp(ms+1, c6, s6, 1, 0, "S", nil)
	k := b.open(251*ms+3, c1, s1, 100, 900)
	h := newH2(tb)
	h.request(1, "/conform.Echo/Unary")
	k.send(254*ms+5, true, h.takeClient(), 1400)
	h.respond(1, "0", "")
	k.send(255*ms+9, false, h.takeServer(), 1400)
	b.tcp(1001*ms+1, c6, s6, 1, 0, "S", nil)
	return b
}

// TestWriteFile_RoundTrip verifies frames written to pcapng read back to
// the events the same frames give as pcap, to the nanosecond, and that the
// file's section and interface carry the scenario's name.
func TestWriteFile_RoundTrip(t *testing.T) {
	b := fieldCapture(t, layers.LinkTypeEthernet)
	path := filepath.Join(t.TempDir(), "he-drop.pcapng")
	cfg := WriterConfig{Scenario: "he-drop-ipv6", Interface: "eth0"}
	if err := WriteFile(path, cfg, b.frames); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Read("same.pcap", bytes.NewReader(b.pcap()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Events, got.Events); diff != "" {
		t.Errorf("events (-pcap +written pcapng):\n%s", diff)
	}
	if len(got.Events) != 8 || got.Format != FormatPcapng || !got.Zero.Equal(t0) {
		t.Errorf("got %d events, format %s, zero %v; want 8, pcapng, %v:\n%v", len(got.Events), got.Format, got.Zero, t0, got.Events)
	}
	checkComments(t, path, cfg)
}

// checkComments reads the file's section and interface back with pcapgo.
func checkComments(t *testing.T, path string, cfg WriterConfig) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ReadPacketData(); err != nil { // the interface block comes before the first packet
		t.Fatal(err)
	}
	intf, err := r.Interface(0)
	if err != nil {
		t.Fatal(err)
	}
	if r.SectionInfo().Comment != cfg.Scenario || intf.Comment != cfg.Scenario || intf.Name != cfg.Interface ||
		intf.LinkType != layers.LinkTypeEthernet {
		t.Errorf("section %+v, interface %+v: want the comments %q, name %q, Ethernet", r.SectionInfo(), intf, cfg.Scenario, cfg.Interface)
	}
}

// TestWriteFile_NothingLeftOnError verifies a failed write leaves neither
// the file nor its temporary behind.
func TestWriteFile_NothingLeftOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcapng")
	if err := os.Mkdir(path, 0o755); err != nil { // the rename onto it fails
		t.Fatal(err)
	}
	if err := WriteFile(path, WriterConfig{}, fieldCapture(t, layers.LinkTypeEthernet).frames); err == nil {
		t.Fatal("writing over a directory: no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v, want only the directory", entries)
	}
}
