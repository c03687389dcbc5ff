// Package session is what the suites send for stateful session affinity:
// the session cookie, computed from the documents, and conform's stand-in
// for the call attribute that carries it to xds_override_host.
//
// The cookie's value is base64 of "<addresses>;<cluster>":
//   - A55 (StatefulSessionFilter Processing): the value of the cookie is the
//     base64 encoding of the address (IP:port) the RPC went to;
//   - A60 (Include Cluster Name in the Cookie): the cluster name follows the
//     address after a semicolon, in the document's example as
//     "206.12.3.6:8080;cluster:<name>" (its pseudo-code puts the name in
//     double quotes; its example, and A61's "<address>;<cluster>", do not);
//   - A61 (Changes to Stateful Session Affinity): the address part is a
//     comma-delimited list of addresses, the address actually used first.
//
// The documents say "base64" and name no variant: this is RFC 4648's
// (section 4: the standard alphabet, padded).
//
// conform has no StatefulSession HTTP filter in front of the policies, and
// no cookies: an RPC is in a session when its request metadata has Header,
// whose value is the cookie's value, empty for a session that has no
// cookie yet (harness/driver/PROTOCOL.md, session_metadata).
package session

import (
	"encoding/base64"
	"strings"

	"github.com/conformlab/conform/harness/scenario"
)

// Header is the request metadata key of conform's stand-in for the
// StatefulSession filter's call attribute (harness/driver/PROTOCOL.md).
const Header = "x-conform-session"

// CookieValue is the session cookie's value for an address list, the
// address to use first at its head, and a cluster ("" for none; A60's
// example prefixes the name with "cluster:"). No addresses and no cluster:
// "", a session without a cookie.
func CookieValue(addrs []string, cluster string) string {
	v := strings.Join(addrs, ",")
	if cluster != "" {
		v += ";" + cluster
	}
	return base64.StdEncoding.EncodeToString([]byte(v))
}

// Cookie puts an RPC in a session whose cookie lists addrs ("ip:port"), in
// order, with no cluster part.
func Cookie(addrs ...string) scenario.RPCOption {
	return scenario.Metadata(Header, CookieValue(addrs, ""))
}

// WithoutCookie puts an RPC in a session that has no cookie yet: the call
// attribute is there, naming no address.
func WithoutCookie() scenario.RPCOption {
	return scenario.Metadata(Header, "")
}
