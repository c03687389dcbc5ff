package recorder_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/trace"
)

// A production client records its channel's load balancing into rotating
// trace files, at most MaxFiles × MaxFileBytes on disk; `conform replay`
// and `conform diff` read them.
func ExampleRecord() {
	addr, stop := exampleServer() // a service on a loopback port
	defer stop()
	dir, _ := os.MkdirTemp("", "lb-trace")
	defer os.RemoveAll(dir)

	opt, rec, err := recorder.Record(recorder.FileOptions{
		Dir:          dir,
		MaxFileBytes: 1 << 20,
		MaxFiles:     4,
		Policy:       "round_robin",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Close()
	cc, err := grpc.NewClient("passthrough:///"+addr, opt, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	fmt.Println("RPC:", err)
	cc.Close()
	rec.Close() // writes what is queued and closes the file

	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	tr, err := trace.ReadFile(files[0])
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("mode:", tr.Header.Mode)
	for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState)) {
		if e.State == "READY" {
			fmt.Println(e.Subchannel, "READY on the server's address:", e.Addr == addr)
		}
	}
	// Output:
	// RPC: <nil>
	// mode: field
	// sc1 READY on the server's address: true
}

func exampleServer() (addr string, stop func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	return lis.Addr().String(), srv.Stop
}
