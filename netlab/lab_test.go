package netlab

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestLab_ServesNameAndHealthOnEveryAddress verifies that each backend answers
// the raw Name method (with its header) and the health service on both families.
func TestLab_ServesNameAndHealthOnEveryAddress(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2", Families: IPv6Only}}})
	for _, b := range l.Backends() {
		for _, ap := range b.Addrs() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			cc := dialGRPC(t, l, ap.String())
			name, err := CallName(ctx, cc)
			if err != nil || name != b.Name() {
				t.Errorf("Name on %s = %q, %v; want %q", ap, name, err, b.Name())
			}
			resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health on %s = %v, %v; want SERVING", ap, resp.GetStatus(), err)
			}
			cancel()
		}
	}
	if got := len(l.Backend("b2").Addrs()); got != 1 {
		t.Errorf("IPv6-only backend has %d addresses, want 1", got)
	}
}

// TestLab_NeighboursArePermanent verifies that client0 knows every backend
// address's MAC from the start, so no SYN waits for ARP or neighbour
// discovery (the capture stamps a SYN when it leaves the interface).
func TestLab_NeighboursArePermanent(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2", Families: IPv4Only}}})
	want := map[netip.Addr]string{}
	for i, b := range l.Backends() {
		for _, ap := range b.Addrs() {
			want[ap.Addr()] = hostMAC(true, i).String()
		}
	}
	err := l.Do("client0", func() error {
		neighs, err := netlink.NeighList(0, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, n := range neighs {
			a, _ := netip.AddrFromSlice(n.IP)
			if mac, ok := want[a.Unmap()]; ok && n.State == netlink.NUD_PERMANENT && n.HardwareAddr.String() == mac {
				delete(want, a.Unmap())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) > 0 {
		t.Errorf("client0 has no permanent neighbour entry for %v", want)
	}
}
