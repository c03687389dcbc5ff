package driver

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
)

// Crash is a driver run that ended because the implementation crashed: the
// driver's process died of a signal only native code raises (a segfault,
// an abort, a bus error…). The drivers are thin wrappers that never raise
// these themselves, so the crash is the implementation's: evidence against
// it, not a broken harness; so is a Go panic raised in the implementation's
// code (goPanic). spec.Judge gives such a run fail verdicts of kind crash,
// with the message, where a driver or harness that broke gives error
// verdicts.
type Crash struct {
	Signal syscall.Signal // the native crash signal; 0 for a Go panic
	// Panic is the first line of a Go panic in the implementation's code
	// ("panic: runtime error: …"), when that was the crash.
	Panic string
	msg   string
}

func (c *Crash) Error() string { return c.msg }

// Crashed says how the implementation crashed, in a line; the error (with
// the step it happened at and the driver's stderr) says the rest.
func (c *Crash) Crashed() string {
	if c.Panic != "" {
		return fmt.Sprintf("the implementation crashed (a Go panic in its code: %s) during the scenario", c.Panic)
	}
	return fmt.Sprintf("the implementation crashed (signal %s) during the scenario", c.Signal)
}

// implPackages are the import paths whose frames make a Go panic the
// implementation's, not the driver's: grpc-go and what it vendors.
var implPackages = []string{"google.golang.org/grpc"}

// goPanic reports the panic line of a Go driver that died of a panic
// raised in the implementation's code: exit status 2 (the Go runtime's for
// an unrecovered panic), "panic: " in its stderr, and a goroutine trace
// whose first frame after the panic is in the implementation (implPackages).
// A panic in the driver's own code is the driver's fault, not a crash.
func goPanic(exitErr error, stderr string) (string, bool) {
	var ee *exec.ExitError
	if !errors.As(exitErr, &ee) || ee.ExitCode() != 2 {
		return "", false
	}
	_, after, ok := strings.Cut(stderr, "panic: ")
	if !ok {
		return "", false
	}
	line, stack, _ := strings.Cut(after, "\n")
	_, frames, ok := strings.Cut(stack, "goroutine ")
	if !ok {
		return "", false
	}
	for _, f := range strings.Split(frames, "\n")[1:] {
		if strings.HasPrefix(f, "panic(") || strings.HasPrefix(f, "\t") || strings.HasPrefix(f, "runtime.") {
			continue // the runtime's own frames and file:line lines
		}
		for _, pkg := range implPackages {
			if strings.HasPrefix(f, pkg) {
				return "panic: " + line, true
			}
		}
		return "", false
	}
	return "", false
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
