package netlab

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Real-time scheduling while a lab is open.
//
// The lab observes a client's timer through what the timer makes the client
// do (a SYN, stamped by the kernel to tens of µs), so the observation is as
// late as the client's thread is in getting a CPU once the timer expires.
// Under ordinary scheduling, on a machine other work shares (2 cores), that
// wake-up was the whole error, and it follows the other work: the
// reference's Connection Attempt Delay (250 ms) was observed 22 ms late at
// p99 with nothing else of ours running and 70 ms (max 186 ms) with one
// core kept busy at load 6–14, 5 ms at load 3–4; nice -20 and a short EEVDF
// slice barely helped (the other work is in other sessions' autogroups).
// With the lab's process and its clients at SCHED_FIFO: 1.7 ms and 1.3 ms
// at p99, max 4.9 ms (BenchmarkLab_ConnectionAttemptDelayJitter in
// harness/runner, which also runs with CONFORM_LAB_SCHED=ordinary;
// suites/spec.LabTimer has the figures).
//
// So while a lab is open every thread of this process (its backends,
// capture and harness, and the clients that run in it) and every thread of
// the processes started in the lab (StartProcess: the drivers) runs
// SCHED_FIFO at the lowest real-time priority. The threads carry
// SCHED_RESET_ON_FORK, so whatever they fork outside the lab (an
// installer's build) starts ordinary; this process's threads born since are
// promoted by a sweep every promoteEvery. A lab process is promoted as soon
// as it is started, without the flag (its threads inherit). When the last lab closes, this process's threads
// get their own scheduling back. The lab's threads mostly sleep; the
// kernel's real-time throttling (95 % of each CPU) bounds a runaway.
// CONFORM_LAB_SCHED=ordinary leaves scheduling alone.

// SchedEnv names the environment variable that, set to "ordinary", keeps
// labs from changing the process's scheduling.
const SchedEnv = "CONFORM_LAB_SCHED"

const (
	realtimePriority = 1 // the lowest SCHED_FIFO priority: above every ordinary thread
	promoteEvery     = 20 * time.Millisecond
)

// fifo is this process's threads' scheduling while a lab is open; a lab
// process's threads have it without SCHED_RESET_ON_FORK, so that the
// threads they start are real-time from birth (what they fork is the lab's:
// in the lab's process group, killed with it).
var (
	fifo    = unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: realtimePriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	labFIFO = unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: realtimePriority}
)

// realtime is the process-wide state: how many open labs want real-time
// scheduling, what each thread had before, and the processes of the labs.
var realtime struct {
	mu    sync.Mutex
	users int
	err   error                  // why the process is not real-time, while users > 0
	saved map[int]unix.SchedAttr // this process's threads, as found
	base  unix.SchedAttr         // for threads born since the first lab opened
	procs map[int]bool           // lab processes (pids) to promote
	stop  chan struct{}          // stops the sweep
	done  chan struct{}
}

// acquireRealtime makes the process real-time for one more lab; it returns
// why it is not (the lab runs on, with ordinary scheduling).
func acquireRealtime() error {
	rt := &realtime
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.users++
	if rt.users > 1 || rt.saved != nil { // real-time already (or its sweep is stopping: releaseRealtime restarts it)
		return rt.err
	}
	rt.err = startRealtime()
	return rt.err
}

// startRealtime promotes every thread of the process and starts the sweep.
// Called with realtime.mu held.
func startRealtime() error {
	rt := &realtime
	if os.Getenv(SchedEnv) == "ordinary" {
		return fmt.Errorf("%s=ordinary", SchedEnv)
	}
	self, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return fmt.Errorf("netlab: reading this thread's scheduling: %w", err)
	}
	if self.Policy == unix.SCHED_FIFO || self.Policy == unix.SCHED_RR {
		return nil // real-time already: someone chose its priority; leave it
	}
	rt.base, rt.saved, rt.procs = *self, map[int]unix.SchedAttr{}, map[int]bool{}
	if err := promoteSelf(); err != nil {
		demoteSelf()
		rt.saved = nil
		return fmt.Errorf("netlab: real-time scheduling: %w", err)
	}
	rt.stop, rt.done = make(chan struct{}), make(chan struct{})
	go sweep(rt.stop, rt.done)
	return nil
}

// releaseRealtime undoes acquireRealtime: the last lab to close gives the
// process's threads their scheduling back.
func releaseRealtime() {
	rt := &realtime
	rt.mu.Lock()
	rt.users--
	if rt.users > 0 || rt.saved == nil {
		rt.mu.Unlock()
		return
	}
	stop, done := rt.stop, rt.done
	rt.mu.Unlock()
	close(stop)
	<-done // the sweep takes realtime.mu: wait for it outside
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.users == 0 && rt.saved != nil { // no lab opened meanwhile
		demoteSelf()
		rt.saved, rt.procs, rt.err = nil, nil, nil
	} else if rt.users > 0 { // one did, and found the sweep stopping
		rt.stop, rt.done = make(chan struct{}), make(chan struct{})
		go sweep(rt.stop, rt.done)
	}
}

// realtimeProcess has the sweep promote a lab process's threads, and
// promotes those it has now.
func realtimeProcess(pid int) {
	rt := &realtime
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.saved == nil {
		return
	}
	rt.procs[pid] = true
	promoteProcess(pid)
}

// sweep promotes, every promoteEvery, the threads born since the last
// sweep: this process's (born ordinary, of a real-time thread, because of
// SCHED_RESET_ON_FORK) and the lab processes'.
func sweep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(promoteEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		realtime.mu.Lock()
		if realtime.saved != nil {
			_ = promoteSelf()
			for pid := range realtime.procs {
				if !promoteProcess(pid) {
					delete(realtime.procs, pid)
				}
			}
		}
		realtime.mu.Unlock()
	}
}

// promoteSelf makes every thread of this process real-time, remembering
// what each had, until a pass finds none left to promote.
func promoteSelf() error {
	rt := &realtime
	for range 10 {
		tids, err := threads("self")
		if err != nil {
			return err
		}
		changed := false
		for _, tid := range tids {
			cur, err := unix.SchedGetAttr(tid, 0)
			if err != nil || cur.Policy == unix.SCHED_FIFO {
				continue // gone, or promoted already
			}
			if _, ok := rt.saved[tid]; !ok {
				rt.saved[tid] = *cur
			}
			if err := unix.SchedSetAttr(tid, &fifo, 0); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue
				}
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return nil
}

// demoteSelf gives every real-time thread of this process what it had, or
// what the first lab's opener had for threads born since.
func demoteSelf() {
	rt := &realtime
	for range 10 {
		tids, err := threads("self")
		if err != nil {
			return
		}
		changed := false
		for _, tid := range tids {
			cur, err := unix.SchedGetAttr(tid, 0)
			if err != nil || cur.Policy != unix.SCHED_FIFO {
				continue
			}
			attr, ok := rt.saved[tid]
			if !ok {
				attr = rt.base
			}
			attr.Size, attr.Flags = unix.SizeofSchedAttr, attr.Flags&unix.SCHED_FLAG_RESET_ON_FORK
			if unix.SchedSetAttr(tid, &attr, 0) == nil {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// promoteProcess makes every thread of process pid real-time; it reports
// whether the process is still there.
func promoteProcess(pid int) bool {
	tids, err := threads(strconv.Itoa(pid))
	if err != nil {
		return false
	}
	for _, tid := range tids {
		if cur, err := unix.SchedGetAttr(tid, 0); err == nil && cur.Policy != unix.SCHED_FIFO {
			_ = unix.SchedSetAttr(tid, &labFIFO, 0)
		}
	}
	return true
}

// threads lists the thread ids of a process ("self" or a pid).
func threads(pid string) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
