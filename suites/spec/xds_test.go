package spec

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestXDS_ACKedByTypeAndVersion verifies that ACKed reads the ACKs of one
// resource type and version only, and XDSRequests one kind of answer.
func TestXDS_ACKedByTypeAndVersion(t *testing.T) {
	req := func(ms int, typeURL, xds, v string) trace.Event {
		return trace.Event{T: time.Duration(ms) * time.Millisecond, Source: trace.SourceControlPlane, Kind: trace.KindXDSRequest,
			TypeURL: typeURL, XDS: xds, Version: v}
	}
	tr := &trace.Trace{Events: []trace.Event{
		req(1, TypeEDS, trace.XDSSubscribe, ""),
		req(2, TypeEDS, trace.XDSACK, "1"),
		req(3, TypeEDS, trace.XDSNACK, "1"),
		req(4, TypeCDS, trace.XDSACK, "2"),
	}}
	for _, c := range []struct {
		typeURL, v string
		want       bool
	}{{TypeEDS, "1", true}, {TypeEDS, "2", false}, {TypeCDS, "2", true}, {TypeCDS, "1", false}} {
		if got := ACKed(tr, c.typeURL, c.v); got != c.want {
			t.Errorf("ACKed(%s, %s) = %v, want %v", c.typeURL, c.v, got, c.want)
		}
	}
	if n := XDSRequests(tr, TypeEDS, trace.XDSNACK); len(n) != 1 || n[0].T != 3*time.Millisecond {
		t.Errorf("EDS NACKs: %v", n)
	}
}
