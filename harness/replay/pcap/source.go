package pcap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// The formats a capture file can have.
const (
	FormatPcap   = "pcap"
	FormatPcapng = "pcapng"
)

// The first bytes of each format: pcap's magic number in either byte
// order, with microsecond or nanosecond stamps, and pcapng's section header
// block type; gzip's, for a compressed file of either.
var (
	pcapMagics = [][]byte{
		{0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4},
		{0x4d, 0x3c, 0xb2, 0xa1}, {0xa1, 0xb2, 0x3c, 0x4d},
	}
	pcapngMagic = []byte{0x0a, 0x0d, 0x0d, 0x0a}
	gzipMagic   = []byte{0x1f, 0x8b}
)

// frame is one packet record of the file.
type frame struct {
	n      int   // 1-based packet number
	offset int64 // of its record in the file; -1 when unknown
	at     time.Time
	link   layers.LinkType
	iface  int    // pcapng interface index; 0 in pcap
	data   []byte // valid until the next read
	length int    // the packet's length on the wire
}

// source reads the packet records of a pcap or pcapng file through
// gopacket's pure-Go readers.
type source struct {
	name   string
	format string
	pcap   *pcapgo.Reader
	ng     *pcapgo.NgReader
	n      int   // packets read whole
	offset int64 // of the next pcap record; -1 when unknown (pcapng, gzip)
}

// openSource recognizes the file's format by its first bytes and reads its
// header.
func openSource(name string, r io.Reader) (*source, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	s := &source{name: name, offset: 24}
	if bytes.HasPrefix(head, gzipMagic) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, s.fileErr(ErrNotCapture, "gzip-compressed, but its gzip header is unreadable (%v)", err)
		}
		br, s.offset = bufio.NewReaderSize(gz, 64<<10), -1
		head, _ = br.Peek(4)
	}
	var err error
	switch {
	case bytes.Equal(head, pcapngMagic):
		s.format, s.offset = FormatPcapng, -1
		s.ng, err = pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	case isPcap(head):
		s.format = FormatPcap
		s.pcap, err = pcapgo.NewReader(br)
	case len(head) == 0:
		return nil, s.fileErr(ErrNotCapture, "the file is empty (want a file written by tcpdump -w)")
	default:
		return nil, s.fileErr(ErrNotCapture, "it starts with % x (want a pcap magic number, a1b2c3d4 or a1b23c4d in "+
			"either byte order, or a pcapng section header, 0a0d0d0a: a file written by tcpdump -w)", head)
	}
	if err != nil {
		return nil, s.headerErr(err)
	}
	return s, nil
}

func isPcap(head []byte) bool {
	for _, m := range pcapMagics {
		if bytes.Equal(head, m) {
			return true
		}
	}
	return false
}

// read fills f with the next packet; it reports false at the end of the
// file.
func (s *source) read(f *frame) (bool, error) {
	var ci gopacket.CaptureInfo
	var err error
	if s.ng != nil {
		f.data, ci, err = s.ng.ZeroCopyReadPacketData()
	} else {
		f.data, ci, err = s.pcap.ZeroCopyReadPacketData()
	}
	f.n, f.offset = s.n+1, s.offset
	if err != nil {
		return false, s.readErr(err, ci)
	}
	s.n++
	if s.offset >= 0 {
		s.offset += 16 + int64(ci.CaptureLength)
	}
	f.at, f.iface, f.length = ci.Timestamp, ci.InterfaceIndex, ci.Length
	f.link = s.linkType(ci)
	return true, nil
}

func (s *source) linkType(ci gopacket.CaptureInfo) layers.LinkType {
	if s.ng == nil {
		return s.pcap.LinkType()
	}
	if len(ci.AncillaryData) > 0 {
		if lt, ok := ci.AncillaryData[0].(layers.LinkType); ok {
			return lt
		}
	}
	return s.ng.LinkType()
}

// readErr turns the library's error reading packet s.n+1 into an *Error;
// nil at a clean end of file.
func (s *source) readErr(err error, ci gopacket.CaptureInfo) error {
	headerRead := ci.CaptureLength != 0 || !ci.Timestamp.IsZero()
	switch {
	case err == io.EOF && !headerRead:
		return nil
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		return s.packetErr(ErrTruncated, "the file ends inside this packet's record (want whole records to the end: "+
			"was tcpdump killed before it flushed, or the file copied while it was written?)")
	}
	return s.packetErr(ErrMalformed, "%v (want a well-formed %s record)", err, s.format)
}

// headerErr turns the library's error reading the file header into an
// *Error.
func (s *source) headerErr(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return s.fileErr(ErrTruncated, "the file ends inside its %s header (want the whole header)", s.format)
	}
	return s.fileErr(ErrMalformed, "%s header: %v", s.format, err)
}

// fileErr is a problem with the file's header.
func (s *source) fileErr(sentinel error, format string, args ...any) *Error {
	return &Error{File: s.name, Offset: 0, Err: sentinel, Reason: fmt.Sprintf(format, args...)}
}

func (s *source) packetErr(sentinel error, format string, args ...any) *Error {
	return &Error{File: s.name, Packet: s.n + 1, Offset: s.offset, Err: sentinel, Reason: fmt.Sprintf(format, args...)}
}
