package client

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// respond is a DiscoveryResponse of one type carrying rs.
func respond(t *testing.T, url, version, nonce string, rs ...types.Resource) *discoveryv3.DiscoveryResponse {
	r := &discoveryv3.DiscoveryResponse{TypeUrl: url, VersionInfo: version, Nonce: nonce}
	for _, x := range rs {
		a, err := anypb.New(x.(proto.Message))
		if err != nil {
			t.Fatal(err)
		}
		r.Resources = append(r.Resources, a)
	}
	return r
}

// TestSession_SameProtocolAsTheStream verifies a Session subscribes, ACKs
// (version and nonce of the response), follows LDS → RDS → CDS → EDS and
// delivers the configuration, then NACKs an invalid CDS update with the
// previous version and a detail, keeping the accepted cluster.
func TestSession_SameProtocolAsTheStream(t *testing.T) {
	s, err := NewSession(Options{NodeID: testNode, Listener: testListener})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Start()
	if len(r.Requests) != 1 || r.Requests[0].GetTypeUrl() != ListenerType || r.Requests[0].GetResponseNonce() != "" ||
		r.Requests[0].GetNode().GetId() != testNode || r.Requests[0].GetResourceNames()[0] != testListener {
		t.Fatalf("Start sent %v, want one LDS subscription for the listener", r.Requests)
	}
	res := baseResources(t, edsCluster("c1"), twoPriorities("c1-eds"))
	nonce := 0
	next := func() string { nonce++; return strconv.Itoa(nonce) }
	steps := []struct {
		url  string
		r    types.Resource
		want []string // the type URLs of the requests sent, in order
	}{
		{ListenerType, res[0], []string{ListenerType, RouteConfigType}},
		{RouteConfigType, res[1], []string{RouteConfigType, ClusterType}},
		{ClusterType, res[2], []string{ClusterType, EndpointsType}},
		{EndpointsType, res[3], []string{EndpointsType}},
	}
	for i, st := range steps {
		n := next()
		r = s.Handle(respond(t, st.url, "1", n, st.r))
		var got []string
		for _, q := range r.Requests {
			got = append(got, q.GetTypeUrl())
		}
		if strings.Join(got, " ") != strings.Join(st.want, " ") {
			t.Fatalf("step %d: requests %v, want %v", i, got, st.want)
		}
		if ack := r.Requests[0]; ack.GetVersionInfo() != "1" || ack.GetResponseNonce() != n || ack.GetErrorDetail() != nil {
			t.Errorf("step %d: %v is not an ACK of version 1 nonce %s", i, ack, n)
		}
		if last := i == len(steps)-1; r.Delivered != last || (last && r.Config == nil) {
			t.Errorf("step %d: delivered %v (config %v), want a config only after EDS", i, r.Delivered, r.Config)
		}
	}
	if r.Config.Cluster != "c1" || len(r.Config.Endpoints["c1-eds"].Priorities) != 2 {
		t.Errorf("config %+v, want cluster c1 with two priorities", r.Config)
	}
	bad := edsCluster("c1", withUpstream(t, idle(&durationpb.Duration{Seconds: 315576000001})))
	n := next()
	r = s.Handle(respond(t, ClusterType, "2", n, bad))
	if len(r.Requests) != 1 || r.Delivered {
		t.Fatalf("NACK: requests %v, delivered %v; want one request and no delivery", r.Requests, r.Delivered)
	}
	nack := r.Requests[0]
	if nack.GetErrorDetail() == nil || nack.GetVersionInfo() != "1" || nack.GetResponseNonce() != n ||
		!strings.Contains(nack.GetErrorDetail().GetMessage(), "idle_timeout") {
		t.Errorf("%v: want a NACK of nonce %s naming idle_timeout, with version 1", nack, n)
	}
	// The accepted cluster stays: a new EDS update builds on it.
	r = s.Handle(respond(t, EndpointsType, "3", next(), twoPriorities("c1-eds")))
	if !r.Delivered || r.Config == nil || r.Config.Clusters["c1"].IdleTimeout != time.Hour {
		t.Errorf("after the NACK: delivered %v config %+v, want the accepted c1 (1 h idle timeout)", r.Delivered, r.Config)
	}
}

// TestSession_NewlySubscribedClusterIsNotAbsent verifies that an aggregate
// cluster's children, subscribed because a CDS response named them, are
// waited for, not reported as not existing before the server has answered
// their subscription (A27); and that a response leaving one out does
// report it.
func TestSession_NewlySubscribedClusterIsNotAbsent(t *testing.T) {
	s, err := NewSession(Options{NodeID: testNode, Listener: testListener})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	s.Handle(respond(t, ListenerType, "1", "1", listener(t, testListener, testRoute)))
	s.Handle(respond(t, RouteConfigType, "1", "2", routeTo(testRoute, "agg")))
	r := s.Handle(respond(t, ClusterType, "1", "3", aggCluster(t, "agg", "c1", "c2")))
	if r.Delivered {
		t.Fatalf("after the aggregate alone the watcher got (%v, %v), want nothing: c1 and c2 are not answered yet", r.Config, r.Err)
	}
	if last := r.Requests[len(r.Requests)-1]; last.GetTypeUrl() != ClusterType || len(last.GetResourceNames()) != 3 {
		t.Fatalf("last request %v, want a CDS subscription to agg, c1, c2", last)
	}
	r = s.Handle(respond(t, ClusterType, "1", "4", aggCluster(t, "agg", "c1", "c2"), edsCluster("c1")))
	if !r.Delivered || r.Err == nil || !errors.Is(r.Err, ErrNotExist) || !strings.Contains(r.Err.Error(), "c2") {
		t.Errorf("a response to the subscription without c2: delivered %v err %v, want c2 does not exist", r.Delivered, r.Err)
	}
}
