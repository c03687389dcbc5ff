package capture

import (
	"net/netip"
	"testing"

	"golang.org/x/net/bpf"
)

var (
	client4 = netip.MustParseAddrPort("198.18.0.1:40000")
	server4 = netip.MustParseAddrPort("198.18.0.2:443")
	client6 = netip.MustParseAddrPort("[fd00:c0f::1]:40000")
	server6 = netip.MustParseAddrPort("[fd00:c0f::2]:443")
)

// TestFilter_PassesOnlySYNAndRSTOverTCP verifies the BPF program accepts SYN,
// SYN-ACK and RST segments of both families with snapLen, and
// drops everything else.
func TestFilter_PassesOnlySYNAndRSTOverTCP(t *testing.T) {
	vm, err := bpf.NewVM(filterProgram())
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	for _, tc := range filterCases() {
		frame := buildFrame(tc.seg)
		got, err := vm.Run(frame)
		if err != nil {
			t.Fatalf("%s: Run: %v", tc.name, err)
		}
		want := 0
		if tc.pass {
			want = snapLen // the kernel keeps at most this much
		}
		if got != want {
			t.Errorf("%s: filter kept %d bytes, want %d", tc.name, got, want)
		}
	}
}

type filterCase struct {
	name string
	seg  segment
	pass bool
}

func filterCases() []filterCase {
	return []filterCase{
		{"v4 SYN", segment{src: client4, dst: server4, flags: flagSYN}, true},
		{"v4 SYN-ACK", segment{src: server4, dst: client4, flags: flagSYN | flagACK}, true},
		{"v4 RST-ACK", segment{src: server4, dst: client4, flags: flagRST | flagACK}, true},
		{"v4 SYN with IP options", segment{src: client4, dst: server4, flags: flagSYN, ipv4Opts: 40}, true},
		{"v4 ACK", segment{src: client4, dst: server4, flags: flagACK}, false},
		{"v4 FIN", segment{src: client4, dst: server4, flags: flagFIN | flagACK}, false},
		{"v4 ACK with IP options", segment{src: client4, dst: server4, flags: flagACK, ipv4Opts: 8}, false},
		{"v4 non-first fragment", segment{src: client4, dst: server4, flags: flagSYN, fragOff: true}, false},
		{"v4 UDP", segment{src: client4, dst: server4, flags: flagSYN, proto: 17}, false},
		{"v6 SYN", segment{src: client6, dst: server6, flags: flagSYN}, true},
		{"v6 SYN-ACK", segment{src: server6, dst: client6, flags: flagSYN | flagACK}, true},
		{"v6 RST", segment{src: server6, dst: client6, flags: flagRST}, true},
		{"v6 ACK", segment{src: client6, dst: server6, flags: flagACK}, false},
		{"v6 UDP", segment{src: client6, dst: server6, flags: flagSYN, proto: 17}, false},
		{"v6 extension header", segment{src: client6, dst: server6, flags: flagSYN, v6Next: 60}, false},
	}
}

// TestFilter_DropsNonIPFrames verifies ARP and short frames are dropped.
func TestFilter_DropsNonIPFrames(t *testing.T) {
	vm, err := bpf.NewVM(filterProgram())
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	arp := append(ether(0x0806), make([]byte, 28)...)
	for name, frame := range map[string][]byte{"ARP": arp, "short": ether(etherTypeIPv4)} {
		if got, err := vm.Run(frame); err != nil || got != 0 {
			t.Errorf("%s: filter kept %d bytes (err %v), want 0", name, got, err)
		}
	}
}

// TestAssembleFilter_MatchesProgramLength verifies the program assembles
// for SO_ATTACH_FILTER without losing instructions.
func TestAssembleFilter_MatchesProgramLength(t *testing.T) {
	prog, err := assembleFilter()
	if err != nil {
		t.Fatalf("assembleFilter: %v", err)
	}
	if len(prog) != len(filterProgram()) {
		t.Fatalf("assembled %d instructions, want %d", len(prog), len(filterProgram()))
	}
}
