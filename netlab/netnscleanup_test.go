package netlab

import (
	"fmt"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netnsCleanupWaiter waits until the kernel has finished tearing down every
// network namespace released so far.
//
// The kernel frees a released namespace later, on an ordered work queue: one
// work item (cleanup_net) takes every namespace queued so far as a batch,
// removes their devices, runs the other exit methods and frees them, then
// runs again for the namespaces queued meanwhile. Nothing in /proc counts
// namespaces being torn down, so the waiter releases probes: a namespace
// whose veth has its other end in an anchor namespace held by the waiter.
// When the kernel removes the probe's devices, the anchor's end goes too and
// the anchor's netlink socket gets RTM_DELLINK. The first probe's shows that
// every namespace released before it is in a batch that has started (its
// own, or an earlier one); the second probe, released after that, is in a
// later batch, which the work queue starts only when those have finished.
type netnsCleanupWaiter struct {
	h       *netlink.Handle // in the anchor namespace
	updates chan netlink.LinkUpdate
}

// probeTimeout bounds one probe; teardown of a 256-backend lab takes
// ~0.3 s.
const probeTimeout = 30 * time.Second

func newNetnsCleanupWaiter(t testing.TB) *netnsCleanupWaiter {
	t.Helper()
	anchor, err := newNS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { anchor.Close() })
	h, err := netlink.NewHandleAt(anchor, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	w := &netnsCleanupWaiter{h: h, updates: make(chan netlink.LinkUpdate, 16)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	if err := netlink.LinkSubscribeWithOptions(w.updates, done, netlink.LinkSubscribeOptions{Namespace: &anchor}); err != nil {
		t.Fatal(err)
	}
	return w
}

// wait returns once every namespace released before it was called is gone.
func (w *netnsCleanupWaiter) wait(t testing.TB) {
	t.Helper()
	for range 2 {
		if err := w.probe(); err != nil {
			t.Fatalf("waiting for namespace teardown: %v", err)
		}
	}
}

// probe creates a namespace with a veth into the anchor, releases it and
// waits until the kernel has removed the veth.
func (w *netnsCleanupWaiter) probe() error {
	ns, err := newNS()
	if err != nil {
		return err
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe"}, PeerName: "probe", PeerNamespace: netlink.NsFd(int(ns))}
	err = w.h.LinkAdd(veth)
	ns.Close()
	if err != nil {
		return err
	}
	timeout := time.After(probeTimeout)
	for {
		select {
		case u := <-w.updates:
			if u.Header.Type == unix.RTM_DELLINK && u.Attrs().Name == "probe" {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("the probe namespace was not torn down within %v", probeTimeout)
		}
	}
}
