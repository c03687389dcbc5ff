package netlab

import (
	"context"
	"net/netip"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// healthService is a backend's health service (grpc.health.v1.Health, as
// gRFC A17 has clients watch it), answering per address: a request is
// answered with the status of the service name it asks for on the address
// its connection was accepted on, so the addresses of one backend (its IPv4
// and IPv6 listeners) can differ. Every (address, service name) is SERVING
// until set otherwise.
type healthService struct {
	healthpb.UnimplementedHealthServer // List

	mu      sync.Mutex
	down    map[healthKey]bool // NOT_SERVING; absent: SERVING
	changed chan struct{}      // closed and replaced on every change

	// sent is told of each status a Watch sent, once the stream took it
	// (the backend records it as EventHealthSent).
	sent func(k healthKey, peer netip.AddrPort, serving bool)
}

// healthKey names one address's status for one service name.
type healthKey struct {
	addr    netip.AddrPort
	service string
}

func newHealthService(sent func(k healthKey, peer netip.AddrPort, serving bool)) *healthService {
	return &healthService{down: map[healthKey]bool{}, changed: make(chan struct{}), sent: sent}
}

// set makes addr serve st for service; watchers of it are told at once.
func (h *healthService) set(addr netip.AddrPort, service string, serving bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := healthKey{addr, service}
	if serving == !h.down[k] {
		return
	}
	if serving {
		delete(h.down, k)
	} else {
		h.down[k] = true
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// status is what k serves now, and the channel closed at the next change.
func (h *healthService) status(k healthKey) (healthpb.HealthCheckResponse_ServingStatus, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down[k] {
		return healthpb.HealthCheckResponse_NOT_SERVING, h.changed
	}
	return healthpb.HealthCheckResponse_SERVING, h.changed
}

// keyOf is the key a request on ctx's connection asks for.
func keyOf(ctx context.Context, service string) (healthKey, error) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.LocalAddr == nil {
		return healthKey{}, status.Error(codes.Internal, "netlab: health: no local address for the connection")
	}
	return healthKey{addrPortOf(p.LocalAddr), service}, nil
}

// Check answers the status once.
func (h *healthService) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	k, err := keyOf(ctx, req.GetService())
	if err != nil {
		return nil, err
	}
	st, _ := h.status(k)
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// Watch sends the status at once, then each time it changes, until the
// client cancels or the connection ends (A17, Watch-Based Health Checking
// Protocol). Each status sent is told to h.sent once the stream has taken
// it: from then the client can hear of it.
func (h *healthService) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	k, err := keyOf(ctx, req.GetService())
	if err != nil {
		return err
	}
	var from netip.AddrPort
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		from = addrPortOf(p.Addr)
	}
	var last healthpb.HealthCheckResponse_ServingStatus = -1
	for {
		st, changed := h.status(k)
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			if h.sent != nil {
				h.sent(k, from, st == healthpb.HealthCheckResponse_SERVING)
			}
			last = st
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}
