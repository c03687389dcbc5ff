package runner

import (
	"testing"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// TestMatches_XDSRequestKindAndType verifies a condition on xds-request
// narrows by what the request was and by resource type, short or as a URL.
func TestMatches_XDSRequestKindAndType(t *testing.T) {
	cdsNACK := trace.Event{Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest, XDS: trace.XDSNACK,
		TypeURL: "type.googleapis.com/envoy.config.cluster.v3.Cluster"}
	edsACK := trace.Event{Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest, XDS: trace.XDSACK,
		TypeURL: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"}
	on := scenario.On(string(trace.KindXDSRequest))
	cases := []struct {
		c    scenario.Cond
		e    trace.Event
		want bool
	}{
		{on, cdsNACK, true},
		{on.WithXDS("NACK", ""), cdsNACK, true},
		{on.WithXDS("NACK", ""), edsACK, false},
		{on.WithXDS("", "CDS"), cdsNACK, true},
		{on.WithXDS("", "CDS"), edsACK, false},
		{on.WithXDS("NACK", "CDS"), cdsNACK, true},
		{on.WithXDS("ACK", "CDS"), cdsNACK, false},
		{on.WithXDS("", "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"), edsACK, true},
		{on.WithXDS("ACK", "LDS"), edsACK, false},
	}
	for i, c := range cases {
		if got := matches(c.c, "", c.e); got != c.want {
			t.Errorf("case %d: matches(%s, %v) = %v, want %v", i, describe(c.c), c.e, got, c.want)
		}
	}
}

// TestMatches_Backend verifies a condition on a backend matches its events
// on any of its addresses, and no other backend's.
func TestMatches_Backend(t *testing.T) {
	on := scenario.On(string(trace.KindPreface)).WithBackend("b2")
	for _, c := range []struct {
		e    trace.Event
		want bool
	}{
		{trace.Event{Kind: trace.KindPreface, Backend: "b2", Addr: "[fd00:c0f::b:2]:50051"}, true},
		{trace.Event{Kind: trace.KindPreface, Backend: "b2", Addr: "198.19.0.2:50051"}, true},
		{trace.Event{Kind: trace.KindPreface, Backend: "b1", Addr: "198.19.0.1:50051"}, false},
		{trace.Event{Kind: trace.KindAccept, Backend: "b2", Addr: "198.19.0.2:50051"}, false},
	} {
		if got := matches(on, "", c.e); got != c.want {
			t.Errorf("matches(%s, %v) = %v, want %v", describe(on), c.e, got, c.want)
		}
	}
}
