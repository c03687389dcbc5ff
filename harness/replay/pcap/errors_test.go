package pcap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/dns/dnsmessage"
)

// twoSYNs is a capture of two SYNs, in Ethernet frames.
func twoSYNs(t *testing.T, link layers.LinkType) *builder {
	b := newBuilder(t, link)
	b.tcp(0, c1, s1, 1, 0, "S", nil)
	b.tcp(ms, c2, s1, 1, 0, "S", nil)
	return b
}

// TestRead_Errors verifies each problem a user can meet is an *Error
// naming the file, the packet (with its byte offset in a plain pcap) and
// what was expected.
func TestRead_Errors(t *testing.T) {
	pcapFile := twoSYNs(t, layers.LinkTypeEthernet).pcap()
	ngFile := twoSYNs(t, layers.LinkTypeEthernet).pcapng()
	secondRecord := int64(24 + 16 + len(twoSYNs(t, layers.LinkTypeEthernet).frames[0].Data))
	dnsOnly := newBuilder(t, layers.LinkTypeEthernet)
	dnsOnly.udp(0, ap(client4, 33000), dns4, dnsQueryMsg(t, 1, "svc.conform.", dnsmessage.TypeA))
	wifi := newBuilder(t, layers.LinkTypeIEEE80211Radio)
	wifi.frames = []Frame{{Time: t0, Data: []byte{0, 0, 8, 0, 0, 0, 0, 0}}}
	tests := []struct {
		name     string
		data     []byte
		sentinel error
		packet   int
		offset   int64
		says     []string
	}{
		{"empty file", nil, ErrNotCapture, 0, 0, []string{"file header:", "the file is empty"}},
		{"a text file", []byte("198.18.0.2.40001 > 198.19.0.1.50051: Flags [S]\n"), ErrNotCapture, 0, 0,
			[]string{"starts with 31 39 38 2e", "tcpdump -w"}},
		{"pcap header cut", pcapFile[:10], ErrTruncated, 0, 0, []string{"file header:", "pcap header"}},
		{"pcap cut inside the second packet", pcapFile[:len(pcapFile)-7], ErrTruncated, 2, secondRecord,
			[]string{"packet 2 (byte offset " + itoa(secondRecord) + ")", "ends inside this packet"}},
		{"pcap cut inside the second packet's header", pcapFile[:secondRecord+5], ErrTruncated, 2, secondRecord, nil},
		{"pcapng cut inside the second packet", ngFile[:len(ngFile)-7], ErrTruncated, 2, -1, []string{"packet 2:"}},
		{"gzip of a cut pcap", gz(t, pcapFile[:len(pcapFile)-7]), ErrTruncated, 2, -1, nil},
		{"no tcp", dnsOnly.pcap(), ErrNoTCP, 0, -1, []string{"field.cap: no TCP: none of its 1 packets is a TCP segment", "want the client's connection attempts"}},
		{"unsupported link type, pcap", wifi.pcap(), ErrLinkType, 1, 24, []string{"link type", "(127)", "want Ethernet"}},
		{"unsupported link type, pcapng", wifi.pcapng(), ErrLinkType, 1, -1, []string{"packet 1:", "want Ethernet"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("field.cap", bytes.NewReader(tc.data))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if !errors.Is(err, tc.sentinel) || e.File != "field.cap" || e.Packet != tc.packet || e.Offset != tc.offset {
				t.Errorf("got %#v, want %v at packet %d offset %d", e, tc.sentinel, tc.packet, tc.offset)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "field.cap: ") {
				t.Errorf("%q does not name the file first", msg)
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%q does not say %q", msg, s)
				}
			}
		})
	}
}

// TestRead_NoTCPWithClientNamed verifies the error names the client
// addresses when Client was given and no segment is theirs.
func TestRead_NoTCPWithClientNamed(t *testing.T) {
	_, err := Read("other.pcap", bytes.NewReader(twoSYNs(t, layers.LinkTypeEthernet).pcap()), Client(client6))
	if !errors.Is(err, ErrNoTCP) || !strings.Contains(err.Error(), "client addresses [fd00:c0f::2]") {
		t.Errorf("got %v, want ErrNoTCP naming the client addresses", err)
	}
}

// TestReadFile_Gzip verifies a gzip-compressed capture is read like the
// plain one, and that ReadFile names the path.
func TestReadFile_Gzip(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "c.pcap")
	packed := filepath.Join(dir, "c.pcap.gz")
	data := twoSYNs(t, layers.LinkTypeEthernet).pcap()
	if err := os.WriteFile(plain, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packed, gz(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(packed)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) != 2 || len(b.Events) != 2 || b.File != packed {
		t.Errorf("plain %v, gzip %v (file %q); want 2 SYNs each", a.Events, b.Events, b.File)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.pcap")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

func gz(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
