package netlab

import (
	"context"
	"net/netip"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestLab_HealthPerAddressAndService verifies that a dual-stack backend's
// health service answers per address and per service name: NOT_SERVING set
// for one service on the IPv4 address reaches a Watch on that address at
// once, while the IPv6 address and the other names stay SERVING, and that
// the change is recorded as a health-set event.
func TestLab_HealthPerAddressAndService(t *testing.T) {
	sent := make(chan Event, 16)
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}}, OnEvent: func(e Event) {
		if e.Kind == EventHealthSent {
			sent <- e
		}
	}})
	addrs := l.Backend("b1").Addrs()
	v4, v6 := addrs[0], addrs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc4 := healthpb.NewHealthClient(dialGRPC(t, l, v4.String()))
	hc6 := healthpb.NewHealthClient(dialGRPC(t, l, v6.String()))
	watch, err := hc4.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	// recv reads the next status the watch sends, and the backend's
	// health-sent of it (recorded once the stream took it: it may come
	// after the client read it).
	recv := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		resp, err := watch.Recv()
		if err != nil || resp.GetStatus() != want {
			t.Fatalf("Watch(svc) on %s: %v, %v; want %v", v4, resp.GetStatus(), err, want)
		}
		select {
		case e := <-sent:
			if e.Addr != v4 || e.Service != "svc" || e.Serving != (want == healthpb.HealthCheckResponse_SERVING) || !e.Peer.IsValid() {
				t.Errorf("health-sent %v, want %v for svc on %s to the client", e, want, v4)
			}
		case <-ctx.Done():
			t.Fatalf("no health-sent for the watch's %v", want)
		}
	}
	recv(healthpb.HealthCheckResponse_SERVING) // every name is SERVING until set
	if err := l.SetHealth(v4, "svc", false); err != nil {
		t.Fatal(err)
	}
	recv(healthpb.HealthCheckResponse_NOT_SERVING)
	check := func(hc healthpb.HealthClient, service string, want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil || resp.GetStatus() != want {
			t.Errorf("Check(%q) = %v, %v; want %v", service, resp.GetStatus(), err, want)
		}
	}
	check(hc4, "svc", healthpb.HealthCheckResponse_NOT_SERVING)
	check(hc4, "", healthpb.HealthCheckResponse_SERVING)
	check(hc6, "svc", healthpb.HealthCheckResponse_SERVING)
	if err := l.SetHealth(v4, "svc", true); err != nil {
		t.Fatal(err)
	}
	recv(healthpb.HealthCheckResponse_SERVING)
	var sets []Event
	for _, e := range l.Events() {
		if e.Kind == EventHealthSet {
			sets = append(sets, e)
		}
	}
	if len(sets) != 2 || sets[0].Addr != v4 || sets[0].Service != "svc" || sets[0].Serving || !sets[1].Serving {
		t.Errorf("health-set events %v, want NOT_SERVING then SERVING for svc on %s", sets, v4)
	}
	if len(sent) != 0 {
		t.Errorf("health-sent %v, sent to no watch", <-sent)
	}
	if err := l.SetHealth(netip.AddrPortFrom(v4.Addr(), 1), "", false); err == nil {
		t.Error("SetHealth on an address no backend has: no error")
	}
}
