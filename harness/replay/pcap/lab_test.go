package pcap

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket/pcapgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// marker is the payload of the datagram that ends a lab capture: frames
// reach a packet socket in the order the interface passed them, so once it
// is read every frame before it has been.
var marker = []byte("conform pcap: end of capture")

// TestRead_LabCapture verifies, on real frames, that a capture written as
// pcapng and read back gives the connection attempts the lab's own capture
// recorded (same kinds, addresses, ports, retransmit flags, and the same
// kernel stamps relative to the first, within stampTolerance), plus the
// h2c preface and the
// RPC's result. Client 0 is refused by b1's IPv6 address (reset), then
// calls Name on its IPv4 address with grpc-go.
func TestRead_LabCapture(t *testing.T) {
	if err := netlab.Available().Err(); err != nil {
		t.Skip(err)
	}
	labEvents := make(chan netlab.Event, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := netlab.Start(ctx, netlab.Config{Backends: []netlab.BackendConfig{{Name: "b1"}}, Capture: true,
		OnEvent: func(e netlab.Event) { labEvents <- e }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	v6, _ := l.Addr("b1", netlab.IPv6)
	v4, _ := l.Addr("b1", netlab.IPv4)
	if err := l.SetFault(v6, netlab.FaultReset); err != nil {
		t.Fatal(err)
	}
	frames := captureFrames(t, l, func() {
		if c, err := l.DialContext(ctx, "tcp", v6.String()); err == nil {
			c.Close()
			t.Errorf("dial %s: connected, want refused", v6)
		}
		callName(ctx, t, l, v4.String())
	})
	path := filepath.Join(t.TempDir(), "lab.pcapng")
	if err := WriteFile(path, WriterConfig{Scenario: t.Name(), Interface: "eth0"}, frames); err != nil {
		t.Fatal(err)
	}
	c, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ours := trace.Select(c.Events, trace.FromSource(trace.SourceCapture))
	lab := labCaptureEvents(t, labEvents, len(ours))
	if diff := cmp.Diff(relative(lab), relative(ours), withinStamp); diff != "" {
		t.Errorf("capture events (-lab +pcap):\n%s\n(pcap file: %s)", diff, path)
	}
	rpcs := trace.Select(c.Events, trace.OfKind(trace.KindPreface, trace.KindRPCResult))
	if len(rpcs) != 2 || rpcs[0].Addr != v4.String() || rpcs[1].Code != "OK" || rpcs[1].Method != netlab.NameMethod {
		t.Errorf("h2c events %v, want the preface to %s and an OK result of %s", rpcs, v4, netlab.NameMethod)
	}
}

// stampTolerance bounds how far two packet sockets' kernel stamps of one
// frame may differ: an incoming frame is stamped per socket when it is
// delivered (measured: a few µs apart).
const stampTolerance = time.Millisecond

var withinStamp = cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() <= stampTolerance })

// captureFrames records every frame on client 0's eth0 while traffic
// runs, then sends the marker and reads up to it.
func captureFrames(t *testing.T, l *netlab.Lab, traffic func()) []Frame {
	var h *pcapgo.EthernetHandle
	if err := l.Do("client0", func() (err error) { h, err = pcapgo.NewEthernetHandle("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	done := make(chan []Frame, 1)
	go func() {
		var fs []Frame
		defer func() { done <- fs }()
		for {
			data, ci, err := h.ReadPacketData()
			if err != nil {
				return
			}
			if bytes.Contains(data, marker) {
				return
			}
			fs = append(fs, Frame{Time: ci.Timestamp, Data: data})
		}
	}()
	traffic()
	sendMarker(t, l)
	select {
	case fs := <-done:
		return fs
	case <-time.After(10 * time.Second):
		t.Fatal("the marker datagram never reached the capture")
	}
	return nil
}

func sendMarker(t *testing.T, l *netlab.Lab) {
	v4, _ := l.Addr("b1", netlab.IPv4)
	c, err := l.DialContext(context.Background(), "udp", netip.AddrPortFrom(v4.Addr(), 9).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(marker); err != nil {
		t.Fatal(err)
	}
}

func callName(ctx context.Context, t *testing.T, l *netlab.Lab, target string) {
	cc, err := grpc.NewClient("passthrough:///"+target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(l.GRPCDialer()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if name, err := netlab.CallName(ctx, cc); err != nil || name != "b1" {
		t.Fatalf("Name on %s: %q, %v; want b1", target, name, err)
	}
}

// labCaptureEvents waits for the lab's capture to report n events and
// returns them as the runner's fromLab writes them (source capture, the
// client's port), in time order.
func labCaptureEvents(t *testing.T, ch <-chan netlab.Event, n int) []trace.Event {
	var out []trace.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case e := <-ch:
			if k := trace.Kind(e.Kind); k == trace.KindSYN || k == trace.KindSYNACK || k == trace.KindRST {
				out = append(out, trace.Event{T: e.T, Source: trace.SourceCapture, Kind: k, Addr: e.Addr.String(),
					Port: int(e.Peer.Port()), Peer: e.Peer.String(), Retransmit: e.Retransmit})
			}
		case <-timeout:
			t.Fatalf("the lab's capture reported %d events, the pcap %d", len(out), n)
		}
	}
	slices.SortStableFunc(out, func(a, b trace.Event) int { return int(a.T - b.T) })
	return out
}

// relative gives times relative to the first event.
func relative(evs []trace.Event) []trace.Event {
	out := slices.Clone(evs)
	for i := range out {
		out[i].T -= evs[0].T
	}
	return out
}
