package netlab

import (
	"context"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// requireRoot skips a lab test, with the reason, when the lab cannot run.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netlab: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
}

// startLab starts a lab and closes it when the test ends.
func startLab(t testing.TB, cfg Config) *Lab {
	t.Helper()
	requireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// dialGRPC opens a grpc-go channel from client0 to one address.
func dialGRPC(t testing.TB, l *Lab, target string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(l.GRPCDialer()))
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", target, err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}
