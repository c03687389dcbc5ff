package pcap

import (
	"errors"
	"fmt"
)

// What went wrong with a capture file, for errors.Is. Every error Read
// returns is an *Error wrapping one of these or the library's own error.
var (
	// ErrNotCapture: the file is neither pcap nor pcapng (nor either of
	// them gzip-compressed).
	ErrNotCapture = errors.New("not a pcap or pcapng capture")
	// ErrTruncated: the file ends in the middle of a packet or block.
	ErrTruncated = errors.New("truncated")
	// ErrMalformed: a record of the file (not a packet's content) cannot
	// be read.
	ErrMalformed = errors.New("malformed")
	// ErrLinkType: packets of a link type the reader does not decode.
	ErrLinkType = errors.New("unsupported link type")
	// ErrNoTCP: the capture holds no TCP segment of a client at all.
	ErrNoTCP = errors.New("no TCP")
)

// Error is a problem with a capture file, at one packet of it where there
// is one.
type Error struct {
	File string
	// Packet is the 1-based number of the packet the problem is at (the
	// packet being read when the file broke off); 0 for the file's header
	// (Offset 0) or for the file as a whole (Offset -1): what all its
	// packets lack.
	Packet int
	// Offset is the byte offset of that packet's record in the file, when
	// it is known (plain pcap); -1 otherwise.
	Offset int64
	// Err is one of the sentinel errors above, or the library's.
	Err error
	// Reason says what was found and what was expected.
	Reason string
}

// Error renders "file: packet N (byte offset M): err: reason", "file:
// file header: err: reason" or "file: err: reason".
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s%v: %s", e.File, e.where(), e.Err, e.Reason)
}

func (e *Error) where() string {
	switch {
	case e.Packet == 0 && e.Offset == 0:
		return "file header: "
	case e.Packet == 0:
		return ""
	case e.Offset >= 0:
		return fmt.Sprintf("packet %d (byte offset %d): ", e.Packet, e.Offset)
	}
	return fmt.Sprintf("packet %d: ", e.Packet)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }
