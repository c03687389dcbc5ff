package driver

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// Crash is a driver run that ended because the implementation crashed: the
// driver's process died of a signal only native code raises (a segfault,
// an abort, a bus error…). The drivers are thin wrappers that never raise
// these themselves, so the crash is the implementation's: evidence against
// it, not a broken harness. spec.Run gives such a run fail verdicts, with
// the message, where a driver or harness that broke gives error verdicts.
type Crash struct {
	Signal syscall.Signal
	msg    string
}

func (c *Crash) Error() string { return c.msg }

// Crashed says how the implementation crashed, in a line; the error (with
// the step it happened at and the driver's stderr) says the rest.
func (c *Crash) Crashed() string {
	return fmt.Sprintf("the implementation crashed (signal %s) during the scenario", c.Signal)
}

// crashSignals are the signals of a native crash.
var crashSignals = []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGILL, syscall.SIGFPE, syscall.SIGABRT}

// crashSignal reports the crash signal exitErr (a process's Wait error)
// shows, if any.
func crashSignal(exitErr error) (syscall.Signal, bool) {
	var ee *exec.ExitError
	if !errors.As(exitErr, &ee) {
		return 0, false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	for _, s := range crashSignals {
		if ws.Signal() == s {
			return s, true
		}
	}
	return 0, false
}
