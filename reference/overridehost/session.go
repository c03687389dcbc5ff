package overridehost

import (
	"encoding/base64"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
)

// EDS health status names (envoy.config.core.v3.HealthStatus) as the
// policy reads them from endpoints. A55 acts on UNKNOWN, HEALTHY and
// DRAINING.
const (
	StatusUnknown  = "UNKNOWN"
	StatusHealthy  = "HEALTHY"
	StatusDraining = "DRAINING"
)

// healthStatusKey is the endpoint attribute holding the EDS health status.
type healthStatusKey struct{}

// SetHealthStatus returns a copy of e carrying its EDS health status
// (A55, XdsClient to Include Endpoint Health Status), for the xDS resolver
// to set on every endpoint it produces. status is the HealthStatus enum
// name ("HEALTHY", "DRAINING", ...).
func SetHealthStatus(e resolver.Endpoint, status string) resolver.Endpoint {
	e.Attributes = e.Attributes.WithValue(healthStatusKey{}, status)
	return e
}

// HealthStatus returns the EDS health status SetHealthStatus put on e;
// UNKNOWN when there is none.
func HealthStatus(e resolver.Endpoint) string {
	if s, _ := e.Attributes.Value(healthStatusKey{}).(string); s != "" {
		return s
	}
	return StatusUnknown
}

// conform's stand-in for the StatefulSession HTTP filter (A55,
// StatefulSessionFilter Processing; A60; A61, Changes to Stateful Session
// Affinity). In gRPC the filter reads the session cookie and hands the
// picker a call attribute carrying the cookie's address list, through which
// the picker hands back the address list of the endpoint actually used.
// conform has no HTTP filter in front of its policies, so:
//
//   - an RPC is part of a session when its outgoing metadata has the
//     SessionHeader key (the attribute is present); its value is the cookie
//     value, empty for a session that has no cookie yet;
//   - the cookie value is A60's: base64 of "<addresses>;<cluster>", the
//     cluster part optional here, the addresses comma-separated as A61 says;
//   - the picker reports the actual address list (the address used first,
//     then the endpoint's other addresses, comma-separated, not encoded) in
//     the pick result's Metadata under ActualAddressesHeader, which a real
//     channel sends to the backend and a test can read from the picker.
const (
	SessionHeader         = "x-conform-session"
	ActualAddressesHeader = "x-conform-session-actual"
)

// EncodeCookie returns the cookie value for an address list (the address
// to use first) and, if not empty, a cluster name (A60).
func EncodeCookie(addrs []string, cluster string) string {
	v := strings.Join(addrs, ",")
	if cluster != "" {
		v += ";" + cluster
	}
	return base64.StdEncoding.EncodeToString([]byte(v))
}

// sessionOf reads the stand-in call attribute: whether the RPC is in a
// session, and the cookie's addresses. A cookie that does not decode to a
// list of IP:port addresses is ignored, as the filter ignores it (A55: log
// and pass the RPC through), leaving a session without a cookie.
func sessionOf(md metadata.MD) (inSession bool, cookie []string) {
	vs, ok := md[SessionHeader]
	if !ok {
		return false, nil
	}
	if len(vs) == 0 || vs[0] == "" {
		return true, nil
	}
	raw, err := base64.StdEncoding.DecodeString(vs[0])
	if err != nil {
		return true, nil
	}
	list, _, _ := strings.Cut(string(raw), ";")
	for _, a := range strings.Split(list, ",") {
		if _, err := netip.ParseAddrPort(a); err != nil {
			return true, nil
		}
		cookie = append(cookie, a)
	}
	return true, cookie
}
