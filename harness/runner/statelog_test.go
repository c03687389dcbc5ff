package runner

import (
	"testing"

	"google.golang.org/grpc/connectivity"
)

// TestStateLog_AwaitReturnsOnceTheStateIsRecorded: await wakes when the
// watcher records the state it waits for, not before (an earlier, other
// state does not end it), and returns at once when nothing will come and
// the limit is zero.
func TestStateLog_AwaitReturnsOnceTheStateIsRecorded(t *testing.T) {
	l := newStateLog()
	l.await(connectivity.Ready, 0) // nothing recorded, no wait

	done := make(chan connectivity.State)
	go func() {
		l.await(connectivity.Ready, 1<<62) // only the record can end it
		l.mu.Lock()
		defer l.mu.Unlock()
		done <- l.last
	}()
	l.record(connectivity.Connecting)
	l.record(connectivity.Ready)
	if got := <-done; got != connectivity.Ready {
		t.Errorf("await returned with %v recorded, want READY", got)
	}
}
