package netlab

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
)

// Process is a child process running inside the client namespace. The lab
// owns it: Close kills it (and its process group) if it is still running.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Wait waits for the process to exit and returns its exit error.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill kills the process group and waits for the process.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

type processes struct {
	mu     sync.Mutex
	closed bool
	all    []*Process
}

// StartProcess starts cmd inside the namespace of host (see Do; usually
// "client0"), so that the process and every thread it starts are in the lab.
// The process gets its own process group and is killed if this process
// dies (Pdeathsig) or when the lab closes. Do not call cmd.Wait; use the
// returned Process.
func (l *Lab) StartProcess(hostName string, cmd *exec.Cmd) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	l.procs.mu.Lock()
	defer l.procs.mu.Unlock()
	if l.procs.closed {
		return nil, errors.New("netlab: lab is closed")
	}
	// The fork happens on the locked thread, inside the namespace; the
	// thread is then switched back and released (so Pdeathsig, which follows
	// the thread, fires only if this whole process dies).
	if err := l.Do(hostName, cmd.Start); err != nil {
		return nil, fmt.Errorf("netlab: starting %s in %s: %w", cmd.Path, hostName, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	l.procs.all = append(l.procs.all, p)
	return p, nil
}

func (ps *processes) killAll() {
	ps.mu.Lock()
	ps.closed = true
	all := ps.all
	ps.all = nil
	ps.mu.Unlock()
	for _, p := range all {
		p.Kill()
	}
}
