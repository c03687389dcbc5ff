package netlab

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/vishvananda/netns"
)

// inNS runs f on a throwaway OS thread switched into ns. The thread switches
// back before it is released; if switching back fails the goroutine exits
// still locked, so the Go runtime discards the thread instead of reusing a
// thread stuck in a lab namespace. A panic in f is returned as an error.
func inNS(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- inNSLocked(ns, f) }()
	return <-errc
}

// inNSLocked is inNS on the calling goroutine, which it leaves locked when
// switching back failed. Its handle to the thread's own namespace is closed
// when it returns, before the caller of inNS goes on.
func inNSLocked(ns netns.NsHandle, f func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netlab: reading the thread's namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netlab: entering namespace: %w", err)
	}
	ferr := callRecovering(f)
	if err := netns.Set(orig); err != nil {
		return fmt.Errorf("netlab: leaving namespace (thread discarded): %w", err) // still locked: the thread dies with the goroutine
	}
	runtime.UnlockOSThread()
	return ferr
}

func callRecovering(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("netlab: panic in namespace: %v\n%s", r, debug.Stack())
		}
	}()
	return f()
}

// newNS creates an unnamed network namespace and returns a handle to it. The
// namespace lives as long as the handle (or a socket or process inside it).
func newNS() (netns.NsHandle, error) {
	ns, err := inNewNS(func(netns.NsHandle) error { return nil })
	if err != nil && ns.IsOpen() {
		ns.Close()
		return netns.None(), err
	}
	return ns, err
}

// inNewNS creates an unnamed network namespace and runs f on a throwaway OS
// thread inside it, so that every socket f opens belongs to it; then the
// thread switches back, as in inNS. It returns the namespace's handle even
// when f fails (netns.None() only if creating it failed): the caller owns it.
func inNewNS(f func(ns netns.NsHandle) error) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	res := make(chan result, 1)
	go func() {
		ns, err := inNewNSLocked(f)
		res <- result{ns, err}
	}()
	r := <-res
	return r.ns, r.err
}

// inNewNSLocked is inNewNS on the calling goroutine, which it leaves locked
// when switching back failed. Its handle to the thread's own namespace is
// closed when it returns, before the caller of inNewNS goes on.
func inNewNSLocked(f func(ns netns.NsHandle) error) (netns.NsHandle, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return netns.None(), fmt.Errorf("netlab: reading the thread's namespace: %w", err)
	}
	defer orig.Close()
	ns, err := netns.New() // moves this thread into the new namespace
	if err != nil {
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		return netns.None(), fmt.Errorf("netlab: creating a network namespace: %w", err)
	}
	ferr := callRecovering(func() error { return f(ns) })
	if err := netns.Set(orig); err != nil {
		return ns, errors.Join(ferr, fmt.Errorf("netlab: leaving new namespace (thread discarded): %w", err)) // still locked: the thread dies with the goroutine
	}
	runtime.UnlockOSThread()
	return ns, ferr
}
