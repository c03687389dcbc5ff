package netlab

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// policyOf is the scheduling policy of thread or process id (0: the
// calling thread).
func policyOf(t *testing.T, id int) uint32 {
	t.Helper()
	a, err := unix.SchedGetAttr(id, 0)
	if err != nil {
		t.Fatalf("sched_getattr(%d): %v", id, err)
	}
	return a.Policy
}

// TestLab_RealtimeWhileOpen verifies that while a lab is open this process's
// threads and the processes started in the lab run SCHED_FIFO, that what the
// process forks outside the lab starts ordinary (SCHED_RESET_ON_FORK), and
// that closing the lab gives the threads their scheduling back.
func TestLab_RealtimeWhileOpen(t *testing.T) {
	requireRoot(t)
	t.Setenv(SchedEnv, "")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if p := policyOf(t, 0); p != unix.SCHED_NORMAL {
		t.Skipf("the test runs with scheduling policy %d already; it checks the change from SCHED_NORMAL", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Start(ctx, Config{Backends: []BackendConfig{{Name: "b1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Realtime(); err != nil {
		t.Fatalf("Realtime: %v", err)
	}
	if p := policyOf(t, 0); p != unix.SCHED_FIFO {
		t.Errorf("this thread's policy with a lab open: %d, want SCHED_FIFO", p)
	}
	inLab, err := l.StartProcess("client0", exec.Command("sleep", "600"))
	if err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, inLab.Pid()); p != unix.SCHED_FIFO {
		t.Errorf("a process started in the lab: policy %d, want SCHED_FIFO", p)
	}
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = outside.Process.Kill()
		_ = outside.Wait()
	}()
	if p := policyOf(t, outside.Process.Pid); p != unix.SCHED_NORMAL {
		t.Errorf("a process started outside the lab: policy %d, want SCHED_NORMAL", p)
	}
	l.Close()
	tids, err := threads("self")
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy != unix.SCHED_NORMAL {
			t.Errorf("thread %d: policy %d after the lab closed, want SCHED_NORMAL", tid, a.Policy)
		}
	}
}

// TestLab_RealtimeOrdinaryByEnv verifies that CONFORM_LAB_SCHED=ordinary
// leaves the process's scheduling alone, and the lab says so.
func TestLab_RealtimeOrdinaryByEnv(t *testing.T) {
	requireRoot(t)
	t.Setenv(SchedEnv, "ordinary")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := policyOf(t, 0)
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}}})
	if l.Realtime() == nil {
		t.Errorf("Realtime() = nil with %s=ordinary", SchedEnv)
	}
	if p := policyOf(t, 0); p != before {
		t.Errorf("this thread's policy with a lab open: %d, want %d as before", p, before)
	}
}

// TestLab_RealtimeTwoLabs verifies that the process stays real-time until
// the last of two open labs closes.
func TestLab_RealtimeTwoLabs(t *testing.T) {
	requireRoot(t)
	t.Setenv(SchedEnv, "")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if p := policyOf(t, 0); p != unix.SCHED_NORMAL {
		t.Skipf("the test runs with scheduling policy %d already", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Close()
	if p := policyOf(t, 0); p != unix.SCHED_FIFO {
		t.Errorf("one lab still open: policy %d, want SCHED_FIFO", p)
	}
	b.Close()
	if p := policyOf(t, 0); p != unix.SCHED_NORMAL {
		t.Errorf("both closed: policy %d, want SCHED_NORMAL", p)
	}
}
