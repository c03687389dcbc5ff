package driver

import (
	"os"
	"os/exec"
	"syscall"
)

// Isolate makes c start in a network namespace of its own, which has no
// interface but a loopback that is down: a user's code that conform runs
// outside the lab (the check of a user's balancer's driver, the
// simulator's program) can send nothing anywhere. It needs root
// (CAP_SYS_ADMIN); without it c is left as it is, and runs in conform's own
// namespace, as `go test` would run the same code.
func Isolate(c *exec.Cmd) {
	if os.Geteuid() != 0 {
		return
	}
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
}
