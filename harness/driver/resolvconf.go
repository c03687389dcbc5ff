package driver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/conformlab/conform/netlab/dns"
)

// A driver whose implementation resolves names with the system resolver
// (grpc-go's and grpc-js's xDS clients for a LOGICAL_DNS cluster) must ask
// the lab's DNS. It runs in a mount namespace of its own, in which
// /etc/resolv.conf is a file naming the lab's DNS only: the driver and
// everything it starts see it, the rest of the machine keeps its own.

// systemResolvConf is the file bind-mounted over.
const systemResolvConf = "/etc/resolv.conf"

// labResolvConf is the resolv.conf of a driver that asks the lab's DNS: its
// IPv4 service address, one-second timeouts, no search list.
func labResolvConf() string {
	return fmt.Sprintf("# conform: the lab's DNS (netlab/dns)\nnameserver %s\noptions timeout:1 attempts:2\n", dns.ServiceAddrV4)
}

// writeLabResolvConf writes labResolvConf into a new directory under the
// system's temporary directory and returns the file's path and a function
// removing the directory.
func writeLabResolvConf() (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "conform-resolv-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(path, []byte(labResolvConf()), 0o644); err != nil {
		remove()
		return "", nil, err
	}
	return path, remove, nil
}

// withResolvConf wraps cmd so that it runs in a new mount namespace in
// which resolvConf is bind-mounted over /etc/resolv.conf. The unshare
// happens in the child between fork and exec, with the whole mount tree
// made private first (Go does so for CLONE_NEWNS), so the bind mount never
// reaches the root mount namespace; it vanishes with the child's namespace.
// A shell makes the mount, then execs the driver in place: same process,
// same process group, same pipes.
func withResolvConf(cmd *exec.Cmd, resolvConf string) (*exec.Cmd, error) {
	if _, err := os.Stat(systemResolvConf); err != nil {
		return nil, fmt.Errorf("the lab's DNS as the driver's resolver needs %s to bind over: %w", systemResolvConf, err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, err
	}
	script := `mount --bind "$0" ` + systemResolvConf + ` || exit 97; exec "$@"`
	w := exec.Command(sh, append([]string{"-c", script, resolvConf, cmd.Path}, cmd.Args[1:]...)...)
	w.Dir, w.Env = cmd.Dir, cmd.Env
	w.Stdin, w.Stdout, w.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	w.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return w, nil
}
