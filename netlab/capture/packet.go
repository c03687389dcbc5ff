package capture

import (
	"net/netip"
	"strconv"
	"time"
)

// Kind is what a captured TCP segment is.
type Kind int

const (
	// SYN opens a connection attempt (SYN without ACK).
	SYN Kind = iota + 1
	// SYNACK answers a SYN: the server accepts.
	SYNACK
	// RST is any segment with RST set: a refusal or an abort.
	RST
)

func (k Kind) String() string {
	switch k {
	case SYN:
		return "SYN"
	case SYNACK:
		return "SYN-ACK"
	case RST:
		return "RST"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Packet is one captured SYN, SYN-ACK or RST segment.
type Packet struct {
	// Kernel is the kernel's timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME).
	Kernel time.Time
	Kind   Kind
	// Src and Dst are as on the wire: for a SYN, Src is the client.
	Src, Dst netip.AddrPort
	// Seq is the TCP sequence number; a SYN's is its initial one.
	Seq uint32
	// Retransmit marks a SYN that repeats an earlier SYN of the same
	// attempt: same addresses, same initial sequence number, no answer yet.
	Retransmit bool
	// Refusal marks an RST that answered an attempt still waiting for its
	// answer: the server refused the SYN. An RST that aborts an established
	// connection, or one the client sent, is not a refusal.
	Refusal bool
}

// Outcome is the fate of a connection attempt.
type Outcome int

const (
	// Pending: no answer yet and no deadline passed.
	Pending Outcome = iota
	// Established: the server answered with a SYN-ACK.
	Established
	// Reset: the server answered with an RST.
	Reset
	// Unanswered: no answer by the answer deadline or by Close.
	Unanswered
)

func (o Outcome) String() string {
	switch o {
	case Pending:
		return "pending"
	case Established:
		return "established"
	case Reset:
		return "reset"
	case Unanswered:
		return "unanswered"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Attempt is one TCP connection attempt: the SYNs a client sent with one
// initial sequence number to one server address, and how it ended.
type Attempt struct {
	Client, Server netip.AddrPort
	FirstSYN       time.Time // kernel timestamp of the first SYN
	SYNs           int       // the first SYN and its retransmissions
	Outcome        Outcome
	Answered       time.Time // kernel timestamp of the SYN-ACK or RST; zero otherwise
}
