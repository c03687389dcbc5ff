package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/conformlab/conform/netlab/capture"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// TestLab_CaptureRecordsEveryAttemptWithItsOutcome verifies that a known set
// of dials appears in the capture, one attempt each, with the right outcome,
// and that the SYNs are in the merged event stream.
func TestLab_CaptureRecordsEveryAttemptWithItsOutcome(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2"}}, Capture: true})
	b1v4, _ := l.Addr("b1", IPv4)
	b1v6, _ := l.Addr("b1", IPv6)
	b2v4, _ := l.Addr("b2", IPv4)
	b2v6, _ := l.Addr("b2", IPv6)
	must(t, l.SetFault(b1v6, FaultReset))
	must(t, l.SetFault(b2v4, FaultDrop))
	must(t, l.SetFault(b2v6, FaultDown))
	want := map[netip.AddrPort]capture.Outcome{
		b1v4: capture.Established, b1v6: capture.Reset, b2v4: capture.Unanswered, b2v6: capture.Reset,
	}
	order := []netip.AddrPort{b1v4, b1v6, b2v4, b2v6}
	for _, ap := range order {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond) // > 1 s: one retransmit
		if c, err := l.DialContext(ctx, "tcp", ap.String()); err == nil {
			c.Close()
		}
		cancel()
	}
	l.Close() // settles pending attempts as unanswered
	attempts := l.Attempts()
	if len(attempts) != len(order) {
		t.Fatalf("%d attempts captured, want %d: %+v", len(attempts), len(order), attempts)
	}
	for i, a := range attempts {
		if a.Server != order[i] {
			t.Errorf("attempt %d to %s, want %s", i, a.Server, order[i])
		}
		if a.Outcome != want[a.Server] {
			t.Errorf("attempt to %s: %s, want %s", a.Server, a.Outcome, want[a.Server])
		}
	}
	if a := attempts[2]; a.SYNs < 2 {
		t.Errorf("the dropped attempt sent %d SYNs in 1.5 s, want a retransmission", a.SYNs)
	}
	kinds := map[EventKind]int{}
	for _, e := range l.Events() {
		kinds[e.Kind]++
	}
	// The client itself resets the established connection it closes with
	// the server's SETTINGS unread: ≥ 2 RSTs, not exactly 2.
	if kinds[EventSYN] < 5 || kinds[EventSYNACK] != 1 || kinds[EventRST] < 2 {
		t.Errorf("event stream has %v, want ≥5 SYNs, 1 SYN-ACK, ≥2 RSTs", kinds)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// heGap connects a default grpc-go channel to [IPv6, IPv4] of a backend whose
// IPv6 address drops SYNs, and returns the time from the first IPv6 SYN to
// the first IPv4 SYN, as the capture saw them.
func heGap(t testing.TB) time.Duration {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}}, Capture: true})
	v4, _ := l.Addr("b1", IPv4)
	v6, _ := l.Addr("b1", IPv6)
	if err := l.SetFault(v6, FaultDrop); err != nil {
		t.Fatal(err)
	}
	r := manual.NewBuilderWithScheme("lab")
	r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: v6.String()}, {Addr: v4.String()}}})
	cc, err := grpc.NewClient("lab:///b1", grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(l.GRPCDialer()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if name, err := CallName(ctx, cc, grpc.WaitForReady(true)); err != nil || name != "b1" {
		t.Fatalf("RPC: %q, %v", name, err)
	}
	gap, err := firstSYNGap(l.Events(), v6, v4)
	if err != nil {
		t.Fatal(err)
	}
	return gap
}

func firstSYNGap(events []Event, first, second netip.AddrPort) (time.Duration, error) {
	var t1, t2 Duration = -1, -1
	for _, e := range events {
		if e.Kind != EventSYN || e.Retransmit {
			continue
		}
		if e.Addr == first && t1 < 0 {
			t1 = e.T
		}
		if e.Addr == second && t2 < 0 {
			t2 = e.T
		}
	}
	if t1 < 0 || t2 < 0 {
		return 0, fmt.Errorf("no SYN to %s or %s in %v", first, second, events)
	}
	return t2 - t1, nil
}

// TestLab_GRPCGoHappyEyeballs verifies, from the packets, that the grpc-go in
// go.mod sends the IPv4 SYN about one Connection Attempt Delay (A61: 250 ms)
// after the unanswered IPv6 SYN. Loose bounds; the figure is a benchmark.
func TestLab_GRPCGoHappyEyeballs(t *testing.T) {
	if gap := heGap(t); gap < 200*time.Millisecond || gap > 400*time.Millisecond {
		t.Errorf("IPv4 SYN %v after the IPv6 SYN, want 200–400 ms", gap)
	}
}
