package capture

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets into an Ethernet frame, as the filter and the decoder see it.
const (
	ethHeaderLen = 14
	etherTypeOff = 12
	ipv4Off      = ethHeaderLen
	ipv6Off      = ethHeaderLen
	ipv6HdrLen   = 40
	tcpFlagsOff  = 13 // within the TCP header

	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	protoTCP      = 6

	flagFIN = 0x01
	flagSYN = 0x02
	flagRST = 0x04
	flagACK = 0x10

	// snapLen is how much of a matching frame the filter keeps: Ethernet,
	// the longest IPv4 header (60 bytes) and a TCP header without options.
	snapLen = ethHeaderLen + 60 + 20
)

// filterProgram is a classic BPF program that accepts only TCP segments with
// SYN or RST set, carried directly in IPv4 (unfragmented or first fragment)
// or IPv6 (TCP as the first next header), and truncates them to snapLen.
func filterProgram() []bpf.Instruction {
	const (
		v4Frag   = ipv4Off + 6 // flags and fragment offset
		v4Proto  = ipv4Off + 9
		v6Next   = ipv6Off + 6
		v6Flags  = ipv6Off + ipv6HdrLen + tcpFlagsOff
		synOrRST = flagSYN | flagRST
	)
	return []bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: etherTypeOff, Size: 2},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: etherTypeIPv4, SkipFalse: 7}, // → 9
		/* 2 */ bpf.LoadAbsolute{Off: v4Proto, Size: 1},
		/* 3 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: protoTCP, SkipTrue: 11}, // → drop
		/* 4 */ bpf.LoadAbsolute{Off: v4Frag, Size: 2},
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff, SkipTrue: 9}, // → drop
		/* 6 */ bpf.LoadMemShift{Off: ipv4Off}, // X = IPv4 header length
		/* 7 */ bpf.LoadIndirect{Off: ipv4Off + tcpFlagsOff, Size: 1},
		/* 8 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: synOrRST, SkipTrue: 5, SkipFalse: 6},
		/* 9 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: etherTypeIPv6, SkipFalse: 5}, // → drop
		/* 10 */ bpf.LoadAbsolute{Off: v6Next, Size: 1},
		/* 11 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: protoTCP, SkipTrue: 3}, // → drop
		/* 12 */ bpf.LoadAbsolute{Off: v6Flags, Size: 1},
		/* 13 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: synOrRST, SkipFalse: 1},
		/* 14 */ bpf.RetConstant{Val: snapLen}, // accept
		/* 15 */ bpf.RetConstant{Val: 0}, // drop
	}
}

// assembleFilter turns filterProgram into the form SO_ATTACH_FILTER takes.
func assembleFilter() ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(filterProgram())
	if err != nil {
		return nil, err
	}
	out := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		out[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	return out, nil
}
