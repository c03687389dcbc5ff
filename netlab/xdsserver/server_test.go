package xdsserver

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/conformlab/conform/netlab"
)

func TestMain(m *testing.M) {
	runtime.LockOSThread() // DESIGN.md: the main goroutine stays on the main thread
	os.Exit(m.Run())
}

// TestClassify_FromTheRequestAlone: a request without a nonce subscribes, one
// with a nonce ACKs, one with error_detail NACKs (whatever else it carries).
func TestClassify_FromTheRequestAlone(t *testing.T) {
	for _, c := range []struct {
		req  *discovery.DiscoveryRequest
		want RequestKind
	}{
		{&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType}, Subscribe},
		{&discovery.DiscoveryRequest{VersionInfo: "v1", ResponseNonce: "1"}, ACK},
		{&discovery.DiscoveryRequest{VersionInfo: "v1", ResponseNonce: "2", ErrorDetail: &statuspb.Status{Message: "x"}}, NACK},
		{&discovery.DiscoveryRequest{ErrorDetail: &statuspb.Status{}}, NACK},
	} {
		if got := Classify(c.req); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.req, got, c.want)
		}
	}
}

// TestBootstrap_NamesTheService: the bootstrap is JSON naming the IPv4
// service address and the node.
func TestBootstrap_NamesTheService(t *testing.T) {
	b := string(Bootstrap(`n"1`))
	for _, want := range []string{`"server_uri":"198.18.255.18:18000"`, `"id":"n\"1"`, `"type":"insecure"`, `"locality":{}`} {
		if !strings.Contains(b, want) {
			t.Errorf("Bootstrap = %s, missing %s", b, want)
		}
	}
	if ServerURIV6() != "[fd00:c0f::d:18]:18000" {
		t.Errorf("ServerURIV6 = %s", ServerURIV6())
	}
}

func startLab(t *testing.T) *netlab.Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netlab/xdsserver lab test: needs root (CAP_NET_ADMIN) to create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := netlab.Start(ctx, netlab.Config{Backends: []netlab.BackendConfig{{Name: "b1"}}})
	if err != nil {
		t.Fatalf("netlab.Start: %v", err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

// adsClient is a raw ADS stream from client0: no go-control-plane client,
// only the generated stubs, so it sees what any client would.
type adsClient struct {
	t      *testing.T
	conn   *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
}

func dialADS(t *testing.T, lab *netlab.Lab, addr string) *adsClient {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithContextDialer(lab.GRPCDialer()),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		cancel()
		conn.Close()
		t.Fatal(err)
	}
	c := &adsClient{t: t, conn: conn, stream: stream, cancel: cancel}
	t.Cleanup(c.close)
	return c
}

func (c *adsClient) close() {
	c.cancel()
	c.conn.Close()
}

func (c *adsClient) send(req *discovery.DiscoveryRequest) {
	c.t.Helper()
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *adsClient) recv() *discovery.DiscoveryResponse {
	c.t.Helper()
	resp, err := c.stream.Recv()
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	return resp
}

func testCluster(name string, lb cluster.Cluster_LbPolicy) *cluster.Cluster {
	return &cluster.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{
			EdsConfig: &core.ConfigSource{ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}}},
		},
		LbPolicy: lb,
	}
}

func decodeCluster(t *testing.T, resp *discovery.DiscoveryResponse) []*cluster.Cluster {
	t.Helper()
	var out []*cluster.Cluster
	for _, a := range resp.GetResources() {
		c := &cluster.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			t.Fatalf("resource %s: %v", a.GetTypeUrl(), err)
		}
		out = append(out, c)
	}
	return out
}

func waitEvent(t *testing.T, s *Server, what string, match func(Event) bool) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := s.Wait(ctx, match)
	if err != nil {
		t.Fatalf("%s: %v\nevents:\n%s", what, err, eventsText(s))
	}
	return e
}

func eventsText(s *Server) string {
	var b strings.Builder
	for _, e := range s.Events() {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// TestLab_ADS_SubscribeACKNACK: a raw ADS client in client0 (on both service
// addresses) gets the resources set, and the server reports its subscribe,
// its ACK and its NACK with the error detail and the version it rejected;
// after the NACK the rejected version is not sent again, the next one is.
func TestLab_ADS_SubscribeACKNACK(t *testing.T) {
	lab := startLab(t)
	var (
		mu     sync.Mutex
		hooked []Event
	)
	hook := func(e Event) { mu.Lock(); hooked = append(hooked, e); mu.Unlock() }
	s, err := Start(lab, "client0", WithClock(lab.Now), WithEventHook(hook))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, addr := range []string{ServerURI(), ServerURIV6()} {
		t.Run(addr, func(t *testing.T) {
			v1 := "v1-" + addr
			if err := s.SetResources(v1, map[resource.Type][]types.Resource{
				resource.ClusterType:  {testCluster("c1", cluster.Cluster_RANDOM)},
				resource.EndpointType: {&endpoint.ClusterLoadAssignment{ClusterName: "c1"}},
			}); err != nil {
				t.Fatal(err)
			}
			node := "node-" + addr
			c := dialADS(t, lab, addr)
			c.send(&discovery.DiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: resource.ClusterType, ResourceNames: []string{"c1"}})
			resp := c.recv()
			if resp.GetVersionInfo() != v1 || resp.GetTypeUrl() != resource.ClusterType {
				t.Fatalf("first response: version %q type %q, want %s CDS", resp.GetVersionInfo(), resp.GetTypeUrl(), v1)
			}
			if cs := decodeCluster(t, resp); len(cs) != 1 || cs[0].GetName() != "c1" {
				t.Fatalf("first response carries %v, want c1", cs)
			}
			sub := waitEvent(t, s, "subscribe", func(e Event) bool { return e.Node == node && !e.Response })
			if sub.Kind != Subscribe || sub.TypeURL != resource.ClusterType || !slices.Equal(sub.Names, []string{"c1"}) || sub.Nonce != "" {
				t.Errorf("first request event = %v", sub)
			}
			sent := waitEvent(t, s, "response", func(e Event) bool { return e.Node == node && e.Response })
			if sent.Nonce != resp.GetNonce() || sent.Version != v1 || !slices.Equal(sent.Names, []string{"c1"}) {
				t.Errorf("response event = %v, client got nonce %q", sent, resp.GetNonce())
			}

			c.send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, ResourceNames: []string{"c1"},
				VersionInfo: v1, ResponseNonce: resp.GetNonce()})
			ack := waitEvent(t, s, "ACK", func(e Event) bool { return e.Node == node && e.Kind == ACK })
			if ack.Version != v1 || ack.Nonce != resp.GetNonce() || ack.RespondedVersion != v1 || ack.ErrorDetail != "" {
				t.Errorf("ACK event = %v", ack)
			}

			// A new version, which the client rejects.
			v2 := "v2-" + addr
			if err := s.SetResources(v2, map[resource.Type][]types.Resource{
				resource.ClusterType: {testCluster("c1", cluster.Cluster_RING_HASH)},
			}); err != nil {
				t.Fatal(err)
			}
			resp = c.recv()
			if resp.GetVersionInfo() != v2 {
				t.Fatalf("second response version %q, want %s", resp.GetVersionInfo(), v2)
			}
			c.send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, ResourceNames: []string{"c1"},
				VersionInfo: v1, ResponseNonce: resp.GetNonce(),
				ErrorDetail: &statuspb.Status{Code: 3, Message: "cluster c1: ring_hash is not wanted here"}})
			nack := waitEvent(t, s, "NACK", func(e Event) bool { return e.Node == node && e.Kind == NACK })
			if nack.Version != v1 || nack.Nonce != resp.GetNonce() || nack.RespondedVersion != v2 ||
				nack.ErrorCode != 3 || nack.ErrorDetail != "cluster c1: ring_hash is not wanted here" {
				t.Errorf("NACK event = %v", nack)
			}

			// The stream answers in order: if the NACK had made the server
			// send v2 again, that response would come before this EDS one.
			c.send(&discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"c1"}})
			if resp = c.recv(); resp.GetTypeUrl() != resource.EndpointType {
				t.Fatalf("after the NACK the server sent %s version %q, want the EDS response", ShortType(resp.GetTypeUrl()), resp.GetVersionInfo())
			}
			// Setting the same resources again sends nothing (the response
			// after it is v3's), nor does a type left out.
			if err := s.SetResources("unchanged", map[resource.Type][]types.Resource{
				resource.ClusterType: {testCluster("c1", cluster.Cluster_RING_HASH)},
			}); err != nil {
				t.Fatal(err)
			}
			// The next version is sent.
			v3 := "v3-" + addr
			if err := s.SetResources(v3, map[resource.Type][]types.Resource{
				resource.ClusterType: {testCluster("c1", cluster.Cluster_ROUND_ROBIN)},
			}); err != nil {
				t.Fatal(err)
			}
			if resp = c.recv(); resp.GetVersionInfo() != v3 || resp.GetTypeUrl() != resource.ClusterType {
				t.Fatalf("after SetResources(%s) the server sent %s version %q", v3, ShortType(resp.GetTypeUrl()), resp.GetVersionInfo())
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The hook saw what Events has (it is called synchronously, and Close
	// waited for every stream).
	mu.Lock()
	defer mu.Unlock()
	if evs := s.Events(); len(hooked) != len(evs) {
		t.Errorf("hook saw %d events, Events has %d", len(hooked), len(evs))
	}
}

// TestSetResources_RefusesMalformed: unknown types, nil, unnamed and
// duplicate resources are refused before anything is sent.
func TestSetResources_RefusesMalformed(t *testing.T) {
	s := &Server{}
	for name, rs := range map[string]map[resource.Type][]types.Resource{
		"unknown type": {"type.googleapis.com/nope": {testCluster("c1", 0)}},
		"nil":          {resource.ClusterType: {nil}},
		"unnamed":      {resource.ClusterType: {testCluster("", 0)}},
		"duplicate":    {resource.ClusterType: {testCluster("c1", 0), testCluster("c1", 1)}},
	} {
		if err := s.SetResources("v", rs); err == nil {
			t.Errorf("%s: SetResources succeeded", name)
		}
	}
}

// TestLab_Close_LeavesNothing: after Close no goroutine of the server is
// left (an ADS stream was open, and its serving and listening goroutines are
// counted), the stream has ended, and the service addresses are gone from
// the namespace (so nothing can listen on them).
func TestLab_Close_LeavesNothing(t *testing.T) {
	lab := startLab(t)
	before := runtime.NumGoroutine()
	s, err := Start(lab, "client0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetResources("v1", map[resource.Type][]types.Resource{resource.ClusterType: {testCluster("c1", cluster.Cluster_ROUND_ROBIN)}}); err != nil {
		t.Fatal(err)
	}
	c := dialADS(t, lab, ServerURI())
	c.send(&discovery.DiscoveryRequest{Node: &core.Node{Id: "n"}, TypeUrl: resource.ClusterType, ResourceNames: []string{"c1"}})
	c.recv()
	// Close the server with the stream still open: the client sees it end.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.stream.Recv(); err == nil {
		t.Error("the stream still delivers after Close")
	}
	c.close()
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.SetResources("v2", nil); err == nil {
		t.Error("SetResources after Close succeeded")
	}
	err = lab.Do("client0", func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ip, _ := netip.AddrFromSlice(a.IP); ip.Unmap() == ServiceAddrV4 || ip == ServiceAddrV6 {
				t.Errorf("client0 still has the service address %s", ip)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The client's transport goroutines end asynchronously after its
	// Close; the server's have ended when Close returned. Poll for the
	// count (no event marks a goroutine's end), up to a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left:\n%s", n-before, buf[:runtime.Stack(buf, true)])
	}
	// Start again in the same namespace: the addresses were removed.
	s2, err := Start(lab, "client0")
	if err != nil {
		t.Fatalf("Start after Close: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}
