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
	"strings"

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
// reads one (see WithLabResolver). One attempt, one-second timeout: a lost
// query shows as such instead of being hidden by retries.
func ResolvConf() []byte {
	return []byte("# conform lab DNS (netlab/dns)\n" +
		"nameserver " + ServiceAddrV4.String() + "\n" +
		"nameserver " + ServiceAddrV6.String() + "\n" +
		"options timeout:1 attempts:1\n")
}

// Unshare is util-linux's unshare(1), which WithLabResolver uses.
const Unshare = "/usr/bin/unshare"

// The files a child's system resolver reads, which WithLabResolver shadows.
const (
	systemResolvConf = "/etc/resolv.conf"
	systemNSSwitch   = "/etc/nsswitch.conf"
)

// resolverDaemonDirs hold the sockets of resolver daemons that answer a
// process's lookups from outside its network namespace (nscd; systemd's
// resolved, which nsswitch's "resolve" source asks): WithLabResolver hides
// them, so that no lookup leaves the lab.
var resolverDaemonDirs = []string{"/run/nscd", "/var/run/nscd", "/run/systemd/resolve"}

// WriteResolverFiles writes into dir the files WithLabResolver binds:
// resolv.conf (ResolvConf) and, when the machine has an nsswitch.conf, a
// copy of it whose hosts line is "files dns", so that glibc's resolver asks
// the DNS of resolv.conf and nothing else (no mdns, no resolved, no myhostname).
func WriteResolverFiles(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), ResolvConf(), 0o644); err != nil {
		return err
	}
	ns, err := os.ReadFile(systemNSSwitch)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "nsswitch.conf"), labNSSwitch(ns), 0o644)
}

// labNSSwitch is nsswitch.conf with its hosts line "hosts: files dns"
// (added if it had none).
func labNSSwitch(ns []byte) []byte {
	var out []string
	found := false
	for _, line := range strings.Split(strings.TrimRight(string(ns), "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "hosts:" {
			line, found = "hosts: files dns", true
		}
		out = append(out, line)
	}
	if !found {
		out = append(out, "hosts: files dns")
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// WithLabResolver returns a command that runs cmd in a mount namespace of
// its own (private propagation) in which the files WriteResolverFiles wrote
// into dir are bind-mounted over /etc/resolv.conf and /etc/nsswitch.conf and
// the resolver daemons' socket directories are hidden under empty tmpfs: the
// child and everything it starts resolve names through the lab DNS only,
// while the machine's files and every other process are untouched. Mounts
// are made with -n (no /etc/mtab entry). It needs root and unshare(1); cmd's
// Env, Dir, Stdin, Stdout, Stderr and SysProcAttr carry over.
func WithLabResolver(cmd *exec.Cmd, dir string) (*exec.Cmd, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(abs, "resolv.conf")); err != nil {
		return nil, fmt.Errorf("dns: the lab's resolv.conf: %w", err)
	}
	if _, err := os.Stat(systemResolvConf); err != nil {
		return nil, fmt.Errorf("dns: %s, to shadow with the lab's: %w", systemResolvConf, err)
	}
	if _, err := os.Stat(Unshare); err != nil {
		return nil, fmt.Errorf("dns: %s is needed to give a child its own resolver (apt-get install -y util-linux): %w", Unshare, err)
	}
	// unshare --mount makes the new namespace's mounts private before the
	// shell runs, so no mount propagates back. The daemons' directories are
	// hidden first; /etc/resolv.conf may be a link into one of them
	// (resolved's stub file), so the bind goes on the link's target, made
	// afresh in the empty tmpfs if need be. Exit status 97: a mount failed
	// (the shell says which on stderr).
	script := `rc=$(readlink -f ` + systemResolvConf + `) || exit 97
for d in ` + strings.Join(resolverDaemonDirs, " ") + `; do
	if [ -d "$d" ]; then mount -n -t tmpfs -o size=4k,mode=0755 conform-no-resolver "$d" || exit 97; fi
done
[ -e "$rc" ] || : > "$rc" || exit 97
mount -n --bind "$0/resolv.conf" "$rc" || exit 97
if [ -f "$0/nsswitch.conf" ]; then mount -n --bind "$0/nsswitch.conf" "$(readlink -f ` + systemNSSwitch + `)" || exit 97; fi
exec "$@"`
	args := append([]string{Unshare, "--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", script, abs, cmd.Path}, cmd.Args[1:]...)
	w := &exec.Cmd{Path: Unshare, Args: args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin, Stdout: cmd.Stdout,
		Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr}
	return w, nil
}
