package xdsserver

import (
	"fmt"
	"strings"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// RequestKind says what a DiscoveryRequest was, from its own fields, the
// way the xDS protocol defines them ("ACK and NACK semantics"), so that the
// same rule holds for a client in any language:
//
//   - Subscribe: no response_nonce. The first request for a type on a stream
//     (or a request sent before any response of that type arrived).
//   - ACK: a response_nonce and no error_detail. The client accepted the
//     response with that nonce; version_info is its version. A change of
//     subscription (other resource names) after a response is also an ACK.
//   - NACK: error_detail set. The client rejected the response with that
//     nonce; version_info stays the last version it accepted.
type RequestKind string

// The request kinds.
const (
	Subscribe RequestKind = "request"
	ACK       RequestKind = "ACK"
	NACK      RequestKind = "NACK"
)

// Classify returns the kind of req.
func Classify(req *discovery.DiscoveryRequest) RequestKind {
	switch {
	case req.GetErrorDetail() != nil:
		return NACK
	case req.GetResponseNonce() != "":
		return ACK
	}
	return Subscribe
}

// Event is one DiscoveryRequest the server received (Kind Subscribe, ACK or
// NACK), or one DiscoveryResponse it sent (Response is true).
type Event struct {
	T        time.Duration // on the server's clock (WithClock)
	Stream   int64         // go-control-plane's stream id, stable within a run
	Node     string        // the client's node id (the stream's first request carries it)
	TypeURL  string        // "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	Response bool          // a response the server sent, not a request

	// Requests.
	Kind        RequestKind
	Version     string   // version_info: the last version the client accepted ("" before any)
	Nonce       string   // response_nonce: the response this request answers ("" for Subscribe)
	Names       []string // resource_names (empty: wildcard)
	ErrorCode   int32    // NACK: error_detail.code (a google.rpc.Code)
	ErrorDetail string   // NACK: error_detail.message
	// RespondedVersion is the version of the response Nonce names, as this
	// server sent it: for a NACK, the version the client rejected. Empty when
	// the nonce is unknown (another stream's, or none).
	RespondedVersion string

	// Responses: Version and Nonce are the response's; Names are the names
	// of the resources it carried.
}

// String renders e on one line: "12ms stream 1 node n CDS NACK version v1
// nonce 2 (rejected v2) [c1]: cluster c1: …".
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v stream %d node %q %s ", e.T, e.Stream, e.Node, ShortType(e.TypeURL))
	if e.Response {
		b.WriteString("response")
	} else {
		b.WriteString(string(e.Kind))
	}
	fmt.Fprintf(&b, " version %q nonce %q", e.Version, e.Nonce)
	if e.RespondedVersion != "" && e.RespondedVersion != e.Version {
		fmt.Fprintf(&b, " (rejected %q)", e.RespondedVersion)
	}
	fmt.Fprintf(&b, " %v", e.Names)
	if e.Kind == NACK {
		fmt.Fprintf(&b, ": code %d: %s", e.ErrorCode, e.ErrorDetail)
	}
	return b.String()
}

// ShortType names the four gRPC resource types by their usual abbreviation
// (LDS, RDS, CDS, EDS) and any other by its type URL.
func ShortType(typeURL string) string {
	switch strings.TrimPrefix(typeURL, "type.googleapis.com/") {
	case "envoy.config.listener.v3.Listener":
		return "LDS"
	case "envoy.config.route.v3.RouteConfiguration":
		return "RDS"
	case "envoy.config.cluster.v3.Cluster":
		return "CDS"
	case "envoy.config.endpoint.v3.ClusterLoadAssignment":
		return "EDS"
	}
	return typeURL
}
