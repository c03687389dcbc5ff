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
