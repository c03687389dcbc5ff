package runner

import (
	"sync"
	"time"

	"google.golang.org/grpc/connectivity"
)

// stateLog is what a lab run's channel-state watcher has recorded, so that
// closing the channel can first let the watcher catch up: the watcher reads
// the channel's state after each change, and a state the channel reached
// just before Close would otherwise be read as SHUTDOWN, and lost (seen: a
// run finishing on the policy's READY whose channel-state READY was never
// recorded).
type stateLog struct {
	mu      sync.Mutex
	last    connectivity.State
	logged  bool
	changed chan struct{} // closed and replaced at each record
}

func newStateLog() *stateLog { return &stateLog{changed: make(chan struct{})} }

// record notes that the watcher recorded s.
func (l *stateLog) record(s connectivity.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last, l.logged = s, true
	close(l.changed)
	l.changed = make(chan struct{})
}

// await waits until the last state recorded is s, or for at most limit.
func (l *stateLog) await(s connectivity.State, limit time.Duration) {
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		l.mu.Lock()
		done, changed := l.logged && l.last == s, l.changed
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			return
		}
	}
}
