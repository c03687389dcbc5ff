package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/conformlab/conform/harness/replay/pcap"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/netlab"
)

type pcapDirKey struct{}

// WithPCAP makes every lab run under ctx also write the frames its
// client's interface passed (client 0's eth0: every packet the client sent
// and received, whole) into dir as a pcapng file (PCAPPath), which
// Wireshark opens and harness/replay/pcap reads. The file's section
// comment names the scenario and the implementation; its interface's
// comment says which address is which backend's (the trace's lanes).
func WithPCAP(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, pcapDirKey{}, dir)
}

func pcapDir(ctx context.Context) string {
	dir, _ := ctx.Value(pcapDirKey{}).(string)
	return dir
}

// PCAPPath is the file a lab run of scenario by impl writes under
// WithPCAP(dir): dir/<scenario>.<impl>.lab.pcapng, the implementation's
// name made a file name ("grpc-go@v1.85.0" → "grpc-go-v1.85.0").
func PCAPPath(dir, scenario, impl string) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%s.lab.pcapng", scenario, FileSafe(impl)))
}

// FileSafe is name with the characters a file name should not have ("@",
// "/", spaces) replaced by "-".
func FileSafe(name string) string {
	return strings.NewReplacer("@", "-", "/", "-", " ", "-").Replace(name)
}

// endMarker is the payload of the datagram that ends a frame capture:
// frames reach a packet socket in the order the interface passed them, so
// once it is read, every frame before it has been.
var endMarker = []byte("conform: end of the run's capture")

// markerWait bounds the wait for the end marker.
const markerWait = 5 * time.Second

// frameCapture reads every frame of client 0's eth0 while a lab run goes.
type frameCapture struct {
	h       *pcapgo.EthernetHandle
	frames  []pcap.Frame
	stopped bool
	done    chan struct{}
	lanes   string // the interface comment: which address is which
}

// startFrames opens a packet socket on client 0's eth0, in its namespace,
// and reads frames until stop.
func startFrames(l *netlab.Lab, s *scenario.Scenario) (*frameCapture, error) {
	fc := &frameCapture{done: make(chan struct{}), lanes: lanesComment(l, s)}
	err := l.Do("client0", func() (err error) {
		fc.h, err = pcapgo.NewEthernetHandle("eth0")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("capturing the client's frames: %w", err)
	}
	go fc.read()
	return fc, nil
}

func (fc *frameCapture) read() {
	defer close(fc.done)
	for {
		data, ci, err := fc.h.ReadPacketData()
		if err != nil {
			return // closed
		}
		if bytes.Contains(data, endMarker) {
			return
		}
		fc.frames = append(fc.frames, pcap.Frame{Time: ci.Timestamp, Data: data})
	}
}

// stop sends the end marker from the client to a backend address (to
// port 9, discard), waits until the reader has read up to it, and closes
// the socket. The lab must still be open.
func (fc *frameCapture) stop(l *netlab.Lab, s *scenario.Scenario) error {
	if fc.stopped {
		return nil
	}
	fc.stopped = true
	var err error
	if to, ok := markerAddr(l, s); ok {
		err = sendEndMarker(l, to)
		if err == nil {
			select {
			case <-fc.done:
			case <-time.After(markerWait):
				err = fmt.Errorf("the capture did not see the end of the run within %v: frames may be missing", markerWait)
			}
		}
	}
	stats, serr := fc.h.Stats()
	err = errors.Join(err, fc.h.Close())
	<-fc.done
	if serr == nil && stats.Drops > 0 {
		err = errors.Join(err, fmt.Errorf("the kernel dropped %d of the client's frames (the capture could not keep up)", stats.Drops))
	}
	return err
}

// abort closes the socket of a capture that was not stopped (a run that
// ended in a panic).
func (fc *frameCapture) abort() {
	if !fc.stopped {
		fc.stopped = true
		fc.h.Close()
		<-fc.done
	}
}

// markerAddr is the first backend address of s in the lab.
func markerAddr(l *netlab.Lab, s *scenario.Scenario) (netip.AddrPort, bool) {
	for _, b := range s.Backends {
		for _, fam := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
			if a, err := l.Addr(b.Name, fam); err == nil {
				return netip.AddrPortFrom(a.Addr(), 9), true
			}
		}
	}
	return netip.AddrPort{}, false
}

func sendEndMarker(l *netlab.Lab, to netip.AddrPort) error {
	c, err := l.DialContext(context.Background(), "udp", to.String())
	if err != nil {
		return fmt.Errorf("ending the capture: %w", err)
	}
	defer c.Close()
	if _, err := c.Write(endMarker); err != nil {
		return fmt.Errorf("ending the capture: %w", err)
	}
	return nil
}

// lanesComment says which address is which backend's:
// "client0 eth0; b1/ipv4 = 198.19.0.1:50051, b1/ipv6 = [fd00:c0f::b:1]:50051".
func lanesComment(l *netlab.Lab, s *scenario.Scenario) string {
	var parts []string
	for _, b := range s.Backends {
		for _, fam := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
			if a, err := l.Addr(b.Name, fam); err == nil {
				parts = append(parts, fmt.Sprintf("%s/%s = %s", b.Name, strings.ToLower(fam.String()), a))
			}
		}
	}
	return "the client's interface (client0 eth0); the trace's address lanes: " + strings.Join(parts, ", ")
}

// write writes the frames read to PCAPPath(dir, s.Name, impl).
func (fc *frameCapture) write(dir string, s *scenario.Scenario, impl string) error {
	section := fmt.Sprintf("conform lab run: scenario %s, implementation %s", s.Name, impl)
	if s.Description != "" {
		section += ": " + s.Description
	}
	path := PCAPPath(dir, s.Name, impl)
	cfg := pcap.WriterConfig{Scenario: section, Interface: "eth0", InterfaceComment: fc.lanes}
	if err := pcap.WriteFile(path, cfg, fc.frames); err != nil {
		return fmt.Errorf("writing the capture %s: %w", path, err)
	}
	return nil
}
