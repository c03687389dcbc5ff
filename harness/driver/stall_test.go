package driver

import (
	"context"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

// TestStallWatch_GoDriverReportsItsProcessStopped verifies the Go driver's
// stall watch (PROTOCOL.md, "Stalls"): it claims stall_watch in hello, and
// when its process is stopped (SIGSTOP) for 80 ms and continued, it
// reports a stall of about that length, placed where the process stood
// still on the lab's clock.
func TestStallWatch_GoDriverReportsItsProcessStopped(t *testing.T) {
	requireLab(t)
	cmd := install(t, Release{Name: Reference})
	lab, err := netlab.Start(context.Background(), netlab.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	stalls := make(chan trace.Event, 64)
	p, err := Start(lab, cmd, ProcessOptions{Record: func(e trace.Event) {
		if e.Kind == trace.KindStall {
			stalls <- e
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if !p.Hello().Can[CanStallWatch] {
		t.Fatalf("hello does not claim %s: %+v", CanStallWatch, p.Hello().Can)
	}
	const stopped = 80 * time.Millisecond
	before := lab.Now()
	if err := syscall.Kill(p.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, p.Pid())
	time.Sleep(stopped) // the stimulus: the process stands still this long
	if err := syscall.Kill(p.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	after := lab.Now()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-stalls:
			if s.Duration < stopped-10*time.Millisecond {
				continue // the machine's own, shorter stall
			}
			if s.Duration > after-before+10*time.Millisecond || s.T < before-10*time.Millisecond || s.T+s.Duration > after+10*time.Millisecond {
				t.Fatalf("stall %v at %v, want one within the stop [%v, %v]", s.Duration, s.T, before, after)
			}
			return
		case <-deadline:
			t.Fatalf("no stall of about %v reported within 10 s of the process's stop", stopped)
		}
	}
}

// waitStopped waits until the child pid has stopped. A SIGSTOP is acted on
// only when one of the process's threads next runs; on a loaded machine
// that can take longer than the stop lasts, and a SIGCONT that comes first
// discards the pending stop (signal(7)), so the process never stands
// still (CI once saw exactly that). waitid with WNOWAIT reports the stop
// without consuming anything the process's own Wait needs.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var info unix.Siginfo
		done <- unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waiting for the driver to stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the driver did not stop within 10 s of SIGSTOP")
	}
}
