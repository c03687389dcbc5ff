package recorder_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/recorder"
	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/trace"
)

// serveHealth starts a gRPC server with the health service on a loopback
// port and returns its address.
func serveHealth(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// TestRecord_RealChannelWritesFieldTraces verifies a grpc-go channel with
// Record's dial option, round_robin over two loopback servers, writes a
// field trace that the trace reader, the comparison and the replay's
// inference accept, showing both subchannels READY and the RPCs' picks.
func TestRecord_RealChannelWritesFieldTraces(t *testing.T) {
	a, b := serveHealth(t), serveHealth(t)
	dir := t.TempDir()
	opt, rec, err := recorder.Record(recorder.FileOptions{Dir: dir, Policy: "round_robin"})
	if err != nil {
		t.Fatal(err)
	}
	r := manual.NewBuilderWithScheme("field")
	r.InitialState(resolver.State{Endpoints: []resolver.Endpoint{{Addresses: []resolver.Address{{Addr: a}}}, {Addresses: []resolver.Address{{Addr: b}}}}})
	cc, err := grpc.NewClient("field:///svc", opt, grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Ten RPCs, and more until both servers have answered one: the trace
	// shows both subchannels READY only if both were before the channel
	// closed, and round_robin sends the first RPCs to whichever is READY
	// first (ten RPCs on loopback can all be done before the other's
	// handshake on a loaded machine). An answer from a server proves its
	// subchannel READY: round_robin picks only READY ones.
	answered := map[string]bool{}
	n := 0
	for ; n < 10 || !answered[a] || !answered[b]; n++ {
		rctx := metadata.AppendToOutgoingContext(ctx, recorder.RPCIDKey, fmt.Sprintf("r%d", n+1))
		var p peer.Peer
		if _, err := healthpb.NewHealthClient(cc).Check(rctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true), grpc.Peer(&p)); err != nil {
			t.Fatalf("RPC r%d (answered so far by %v): %v", n+1, answered, err)
		}
		answered[p.Addr.String()] = true
	}
	cc.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("files %v, want one", files)
	}
	tr, err := trace.ReadFile(files[0])
	if err != nil {
		t.Fatalf("the recorder's file is not a trace: %v", err)
	}
	if tr.Header.Mode != trace.ModeField || tr.Header.Impl != "grpc-go" || tr.Header.ImplVersion == "" {
		t.Errorf("header %+v, want mode field, impl grpc-go and its version", tr.Header)
	}
	ready := map[string]bool{}
	for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindSubchannelState)) {
		if e.State == "READY" {
			ready[e.Addr] = true
		}
	}
	if !ready[a] || !ready[b] {
		t.Errorf("READY subchannels on %v, want both %s and %s\n%s", ready, a, b, dump(tr.Events))
	}
	picked := map[string]bool{}
	for _, e := range trace.Select(tr.Events, trace.OfKind(trace.KindPick)) {
		if e.RPC != "" && e.Addr != "" {
			picked[e.RPC] = true
		}
	}
	if len(picked) != n {
		t.Errorf("%d RPCs picked a READY address, want all %d\n%s", len(picked), n, dump(tr.Events))
	}
	if res := compare.Traces(tr, tr, compare.Options{}); !res.Equal() {
		t.Errorf("the trace does not compare equal to itself:\n%s", res)
	}
	s, m, err := replay.Environment(tr.Events)
	if err != nil {
		t.Fatalf("replay.Environment: %v", err)
	}
	if err := s.Validate(); err != nil || len(m) != 2 {
		t.Errorf("inferred scenario: %v, mapping %v; want a valid scenario of the two addresses", err, m)
	}
}

func dump(evs []trace.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.String())
	}
	return fmt.Sprint(slices.Clip(out))
}
