package xdsserver

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/conformlab/conform/netlab"
)

// The service addresses: where the management server listens inside a lab
// host, on the host's loopback. Like netlab/dns's (198.18.255.53,
// fd00:c0f::d:53) they are outside the lab's plan for clients
// (198.18.0.1-250, fd00:c0f::c:N) and backends (198.19.x.y, fd00:c0f::b:N).
var (
	ServiceAddrV4 = netip.MustParseAddr("198.18.255.18")
	ServiceAddrV6 = netip.MustParseAddr("fd00:c0f::d:18")
)

// Port is the management server's port.
const Port = 18000

// ServerURI is the management server's address as an xDS bootstrap's
// server_uri wants it: "198.18.255.18:18000". A client in the host the
// server was started in (usually client0) reaches it there.
func ServerURI() string { return netip.AddrPortFrom(ServiceAddrV4, Port).String() }

// ServerURIV6 is ServerURI on the IPv6 service address: "[fd00:c0f::d:18]:18000".
func ServerURIV6() string { return netip.AddrPortFrom(ServiceAddrV6, Port).String() }

// Bootstrap is a gRPC xDS bootstrap (gRFC A27) naming this server, with
// insecure channel credentials and the given node id: what grpc-go, grpc-js
// and C-core read from GRPC_XDS_BOOTSTRAP_CONFIG (or a file named by
// GRPC_XDS_BOOTSTRAP). The node has an empty locality: A27 makes it
// optional, but grpc-js-xds rejects a bootstrap whose node has none. The target of a channel using it is "xds:///" plus the
// listener's name.
func Bootstrap(nodeID string) []byte {
	return []byte(`{"xds_servers":[{"server_uri":` + strconv.Quote(ServerURI()) +
		`,"channel_creds":[{"type":"insecure"}],"server_features":["xds_v3"]}],"node":{"id":` +
		strconv.Quote(nodeID) + `,"locality":{}}}`)
}

// listenIn adds the service addresses to host's loopback and opens a TCP
// listener on each. The addresses vanish with the namespace; removeAddrs
// (Close) removes them earlier.
func listenIn(ns netlab.Namespaces, host string) (lns []net.Listener, removeAddrs func() error, err error) {
	removeAddrs, err = netlab.AddServiceAddrs(ns, host, ServiceAddrV4, ServiceAddrV6)
	if err != nil {
		return nil, nil, fmt.Errorf("xdsserver: listening in %s: %w", host, err)
	}
	err = ns.Do(host, func() error {
		// A listener keeps the namespace it was opened in (DESIGN.md).
		for _, a := range []netip.Addr{ServiceAddrV4, ServiceAddrV6} {
			ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, Port)))
			if err != nil {
				return err
			}
			lns = append(lns, ln)
		}
		return nil
	})
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		_ = removeAddrs()
		return nil, nil, fmt.Errorf("xdsserver: listening in %s: %w", host, err)
	}
	return lns, removeAddrs, nil
}
