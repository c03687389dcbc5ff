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
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab: reading the thread's namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab: entering namespace: %w", err)
			return
		}
		ferr := callRecovering(f)
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("netlab: leaving namespace (thread discarded): %w", err)
			return // still locked: the thread dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
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
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{netns.None(), fmt.Errorf("netlab: reading the thread's namespace: %w", err)}
			return
		}
		defer orig.Close()
		ns, err := netns.New() // moves this thread into the new namespace
		if err != nil {
			if netns.Set(orig) == nil {
				runtime.UnlockOSThread()
			}
			res <- result{netns.None(), fmt.Errorf("netlab: creating a network namespace: %w", err)}
			return
		}
		ferr := callRecovering(func() error { return f(ns) })
		if err := netns.Set(orig); err != nil {
			res <- result{ns, errors.Join(ferr, fmt.Errorf("netlab: leaving new namespace (thread discarded): %w", err))}
			return // still locked: the thread dies with this goroutine
		}
		runtime.UnlockOSThread()
		res <- result{ns, ferr}
	}()
	r := <-res
	return r.ns, r.err
}
