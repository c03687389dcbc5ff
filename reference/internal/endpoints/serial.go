package endpoints

import "sync"

// serializer runs the policy's work one function at a time, in the order it
// was submitted, without holding a lock while a function runs.
//
// The channel serializes its own calls into the parent; serializer exists
// for what it does not cover: children report their state from inside calls
// the parent made (re-entrantly) and, on the wall clock, from their own timer
// goroutines. Such a report is queued and runs once the current function
// returns, so a parent update reaches the channel as one aggregate, the
// simulation stays deterministic and nothing deadlocks. (pickfirst has the
// same type for the same reasons; the two packages share no code by design:
// the leaf imports nothing of its parents' helpers.)
//
// run returns once f has run or has been handed to the goroutine already
// draining the queue.
type serializer struct {
	mu      sync.Mutex
	queue   []func()
	running bool
}

func (s *serializer) run(f func()) {
	s.mu.Lock()
	s.queue = append(s.queue, f)
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running = true
	for len(s.queue) > 0 {
		next := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		next()
		s.mu.Lock()
	}
	s.running = false
	s.mu.Unlock()
}
