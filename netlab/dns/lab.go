package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/conformlab/conform/netlab"
)

// The service addresses: where the server listens inside a lab host, on the
// host's loopback. They are outside the lab's address plan for clients
// (198.18.0.1-250, fd00:c0f::c:N) and backends (198.19.x.y, fd00:c0f::b:N), so
// they never collide with a host (198.18.0.53 would be client 52's).
var (
	ServiceAddrV4 = netip.MustParseAddr("198.18.255.53")
	ServiceAddrV6 = netip.MustParseAddr("fd00:c0f::d:53")
)

// Port is the DNS port.
const Port = 53

// ListenIn serves the table inside host's namespace (usually "client0"):
// it adds the service addresses to the namespace's loopback (they vanish with
// the namespace) and answers on UDP and TCP port 53 of both. Call it once per
// host that needs the service; every host shares the one table. It returns
// the addresses served.
func (s *Server) ListenIn(ns netlab.Namespaces, host string) ([]netip.AddrPort, error) {
	var pcs []net.PacketConn
	var lns []net.Listener
	aps := []netip.AddrPort{netip.AddrPortFrom(ServiceAddrV4, Port), netip.AddrPortFrom(ServiceAddrV6, Port)}
	if _, err := netlab.AddServiceAddrs(ns, host, ServiceAddrV4, ServiceAddrV6); err != nil {
		return nil, fmt.Errorf("dns: listening in %s: %w", host, err)
	}
	err := ns.Do(host, func() error {
		// Sockets keep the namespace they were opened in (IP literals: no
		// resolution, no other goroutine).
		for _, ap := range aps {
			pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
			if err != nil {
				return err
			}
			pcs = append(pcs, pc)
			ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(ap))
			if err != nil {
				return err
			}
			lns = append(lns, ln)
		}
		return nil
	})
	if err != nil {
		for _, pc := range pcs {
			pc.Close()
		}
		for _, ln := range lns {
			ln.Close()
		}
		return nil, fmt.Errorf("dns: listening in %s: %w", host, err)
	}
	for _, pc := range pcs {
		err = errors.Join(err, s.ServePacket(pc))
	}
	for _, ln := range lns {
		err = errors.Join(err, s.ServeListener(ln))
	}
	if err != nil {
		return nil, err
	}
	return aps, nil
}

// Target is a gRPC target naming name:port through the lab DNS with an
// authority (gRPC's naming doc: dns://[authority]/host[:port]), so a client
// needs no resolv.conf: "dns://198.18.255.53:53/svc.conform:50051". C-core's
// c-ares resolver wants the authority's port spelled out.
func Target(name string, port int) string {
	return "dns://" + netip.AddrPortFrom(ServiceAddrV4, Port).String() + "/" + net.JoinHostPort(name, strconv.Itoa(port))
}

// ResolvConf is a resolv.conf naming only the lab DNS, for a client that
// reads one (see WithResolvConf). One attempt, one-second timeout: a lost
// query shows as such instead of being hidden by retries.
func ResolvConf() []byte {
	return []byte("# conform lab DNS (netlab/dns)\n" +
		"nameserver " + ServiceAddrV4.String() + "\n" +
		"nameserver " + ServiceAddrV6.String() + "\n" +
		"options timeout:1 attempts:1\n")
}

// Unshare is util-linux's unshare(1), which WithResolvConf uses.
const Unshare = "/usr/bin/unshare"

// WithResolvConf returns a command that runs cmd with path bind-mounted over
// /etc/resolv.conf in a mount namespace of its own (private propagation), so
// the child and everything it starts read the lab's resolv.conf while the
// machine's file and every other process are untouched. It needs root and
// unshare(1); cmd's Env, Dir, Stdin, Stdout, Stderr and SysProcAttr carry over.
func WithResolvConf(cmd *exec.Cmd, path string) (*exec.Cmd, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("dns: resolv.conf: %w", err)
	}
	if _, err := os.Stat(Unshare); err != nil {
		return nil, fmt.Errorf("dns: %s is needed to give a child its own resolv.conf (apt-get install -y util-linux): %w", Unshare, err)
	}
	// unshare --mount makes the new namespace's mounts private before the
	// shell runs, so the bind mount cannot propagate back.
	args := append([]string{Unshare, "--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, abs, cmd.Path}, cmd.Args[1:]...)
	w := &exec.Cmd{Path: Unshare, Args: args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
		Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr}
	return w, nil
}
