package pcap

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/conformlab/conform/harness/trace"
)

// Frame is one frame as an interface passed it: its link-layer bytes and
// when.
type Frame struct {
	Time time.Time
	Data []byte
}

// WriterConfig describes the one interface a Writer's file holds.
type WriterConfig struct {
	// Scenario is the scenario's name: the comment of the file's section
	// and of its interface, so the file says what run it records.
	Scenario string
	// Interface is the interface's name ("eth0").
	Interface string
	// InterfaceComment is the interface's comment (which address is
	// which, say); Scenario when empty.
	InterfaceComment string
	// LinkType is the frames' link type; zero means Ethernet.
	LinkType layers.LinkType
}

// Writer writes frames of one interface to a pcapng file, with nanosecond
// timestamps: what tcpdump -w would have written, for the lab's export.
type Writer struct {
	w *pcapgo.NgWriter
}

// NewWriter starts a pcapng file on w: its section header and interface
// description. Flush before closing w.
func NewWriter(w io.Writer, cfg WriterConfig) (*Writer, error) {
	lt := cfg.LinkType
	if lt == 0 {
		lt = layers.LinkTypeEthernet
	}
	intf := pcapgo.NgInterface{Name: cfg.Interface, Comment: cmp.Or(cfg.InterfaceComment, cfg.Scenario), LinkType: lt}
	section := pcapgo.NgSectionInfo{Application: "conform " + trace.HarnessVersion(), Comment: cfg.Scenario}
	nw, err := pcapgo.NewNgWriterInterface(w, intf, pcapgo.NgWriterOptions{SectionInfo: section})
	if err != nil {
		return nil, fmt.Errorf("pcap: writing the pcapng header: %w", err)
	}
	return &Writer{w: nw}, nil
}

// WriteFrame writes one frame, whole.
func (w *Writer) WriteFrame(f Frame) error {
	ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: len(f.Data)}
	if err := w.w.WritePacket(ci, f.Data); err != nil {
		return fmt.Errorf("pcap: writing a frame: %w", err)
	}
	return nil
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

// WriteFile writes frames to a pcapng file at path atomically: to a
// temporary file in the same directory, synced, then renamed.
func WriteFile(path string, cfg WriterConfig, frames []Frame) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("pcap: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil { // as tcpdump -w and conform's traces: readable by all
		return fmt.Errorf("pcap: %w", err)
	}
	w, err := NewWriter(tmp, cfg)
	if err != nil {
		return err
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			return err
		}
	}
	if err := errors.Join(w.Flush(), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("pcap: %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pcap: %w", err)
	}
	return nil
}
