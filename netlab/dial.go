package netlab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Duration is time.Duration; it names the lab's timebase in signatures.
type Duration = time.Duration

// Do runs f on a thread inside the namespace of host: "client0" (or
// "client1", …) or a backend's name. Goroutines f starts do not inherit the
// namespace.
func (l *Lab) Do(hostName string, f func() error) error {
	for _, c := range l.clients {
		if c.name == hostName {
			return inNS(c.ns, f)
		}
	}
	if b := l.byName[hostName]; b != nil {
		return inNS(b.ns, f)
	}
	return fmt.Errorf("netlab: no host %q (hosts are client0..client%d and the backends)", hostName, len(l.clients)-1)
}

// DialContext dials address from client 0's namespace. It has the signature
// of grpc.WithContextDialer's function when network is "tcp". Only IP
// literals inside the lab are accepted: a hostname would be resolved on other
// goroutines, outside the lab (DESIGN.md).
func (l *Lab) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("netlab: dial %q: in-process clients dial IP literals only (ip:port, IPv6 in brackets): %w", address, err)
	}
	if !InLab(ap.Addr()) {
		return nil, fmt.Errorf("netlab: dial %s: not a lab address (%s or %s)", ap, PrefixV4, PrefixV6)
	}
	var conn net.Conn
	err = inNS(l.clients[0].ns, func() (err error) {
		var d net.Dialer
		conn, err = d.DialContext(ctx, network, ap.String())
		return err
	})
	return conn, err
}

// GRPCDialer is DialContext in the shape grpc.WithContextDialer wants.
func (l *Lab) GRPCDialer() func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) { return l.DialContext(ctx, "tcp", addr) }
}
