package capture

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// inNamespace runs fn on a throwaway OS thread switched into ns. A socket fn
// opens keeps that namespace after the thread leaves it. If switching back
// fails, the goroutine exits with its thread still locked, so the Go runtime
// ends the thread instead of reusing it in the wrong namespace.
func inNamespace(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- runSwitched(ns, fn)
	}()
	return <-errc
}

// runSwitched is inNamespace's body, on a locked thread. It unlocks the
// thread only when the thread is back in its original namespace.
func runSwitched(ns netns.NsHandle, fn func() error) error {
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("capture: reading the thread's namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("capture: entering namespace %v: %w", ns, err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		return errors.Join(ferr, fmt.Errorf("capture: leaving namespace %v: %w", ns, err))
	}
	runtime.UnlockOSThread()
	return ferr
}
