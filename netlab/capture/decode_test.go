package capture

import (
	"testing"
)

// TestDecode_ReadsAddressesKindAndSeq verifies frames of both families are
// decoded to the addresses, ports, kind and sequence number on the wire.
func TestDecode_ReadsAddressesKindAndSeq(t *testing.T) {
	cases := []struct {
		seg  segment
		kind Kind
	}{
		{segment{src: client4, dst: server4, flags: flagSYN, seq: 7}, SYN},
		{segment{src: server4, dst: client4, flags: flagSYN | flagACK, seq: 8}, SYNACK},
		{segment{src: server4, dst: client4, flags: flagRST | flagACK, seq: 9}, RST},
		{segment{src: client4, dst: server4, flags: flagSYN, seq: 10, ipv4Opts: 12}, SYN},
		{segment{src: client6, dst: server6, flags: flagSYN, seq: 11}, SYN},
		{segment{src: server6, dst: client6, flags: flagSYN | flagACK, seq: 12}, SYNACK},
		{segment{src: server6, dst: client6, flags: flagRST, seq: 13}, RST},
	}
	for _, tc := range cases {
		p, ok := decode(buildFrame(tc.seg))
		want := Packet{Kind: tc.kind, Src: tc.seg.src, Dst: tc.seg.dst, Seq: tc.seg.seq}
		if !ok || p != want {
			t.Errorf("decode(%+v) = %+v, %v; want %+v, true", tc.seg, p, ok, want)
		}
	}
}

// TestDecode_RejectsTruncatedAndForeignFrames verifies decode refuses what
// it cannot read in full instead of returning a half-filled packet.
func TestDecode_RejectsTruncatedAndForeignFrames(t *testing.T) {
	syn4 := buildFrame(segment{src: client4, dst: server4, flags: flagSYN})
	syn6 := buildFrame(segment{src: client6, dst: server6, flags: flagSYN})
	cases := map[string][]byte{
		"empty":           nil,
		"ethernet only":   syn4[:ethHeaderLen],
		"v4 header cut":   syn4[:ethHeaderLen+19],
		"v4 TCP cut":      syn4[:len(syn4)-1],
		"v6 TCP cut":      syn6[:len(syn6)-1],
		"ACK":             buildFrame(segment{src: client4, dst: server4, flags: flagACK}),
		"UDP":             buildFrame(segment{src: client4, dst: server4, flags: flagSYN, proto: 17}),
		"v6 ext header":   buildFrame(segment{src: client6, dst: server6, flags: flagSYN, v6Next: 60}),
		"ARP":             append(ether(0x0806), make([]byte, 28)...),
		"v4 bad IHL (16)": withByte(syn4, ipv4Off, 0x44),
	}
	for name, frame := range cases {
		if p, ok := decode(frame); ok {
			t.Errorf("%s: decode = %+v, true; want false", name, p)
		}
	}
}

func withByte(b []byte, i int, v byte) []byte {
	out := append([]byte(nil), b...)
	out[i] = v
	return out
}

// TestKindOf_RSTWinsAndSYNACKNeedsBoth verifies flag classification.
func TestKindOf_RSTWinsAndSYNACKNeedsBoth(t *testing.T) {
	cases := map[byte]Kind{
		flagSYN:                     SYN,
		flagSYN | flagACK:           SYNACK,
		flagRST:                     RST,
		flagRST | flagACK:           RST,
		flagSYN | flagRST:           RST,
		flagACK:                     0,
		flagFIN | flagACK | flagSYN: SYNACK,
	}
	for flags, want := range cases {
		if got := kindOf(flags); got != want {
			t.Errorf("kindOf(%#x) = %v, want %v", flags, got, want)
		}
	}
}
