package pickfirst

import "sync"

// serializer runs the policy's work one function at a time, in the order it
// was submitted, without holding a lock while a function runs.
//
// The channel already serializes its own calls into the policy; serializer
// exists for the two sources it does not cover, and for re-entrancy:
//   - Connection Attempt Delay timers, which fire on their own goroutine on
//     the wall clock;
//   - the IDLE picker, which asks to leave IDLE from an RPC's goroutine;
//   - a ClientConn (the simulator's, a parent policy's) that calls back into
//     the policy from inside a call the policy made (Connect reporting
//     CONNECTING synchronously, say). Such a call is queued and runs as soon
//     as the current function returns, on the same goroutine, so simulation
//     stays deterministic and nothing deadlocks.
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
