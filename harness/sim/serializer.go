package sim

import "sync"

// serializer runs calls into the balancer one at a time and never
// re-entrantly, as grpc-go's channel does: anything the balancer triggers
// while it runs (a SubConn state change caused by Connect, say) is queued and
// delivered after the current call returns.
//
// In virtual mode the Channel drains the queue on the caller's goroutine at the
// end of every public method and after every timer step. In wall mode one
// goroutine, owned by the Channel and stopped by Close, drains it.
type serializer struct {
	mu      sync.Mutex
	q       []func()
	running bool
	wake    chan struct{} // wall mode only
	stop    chan struct{}
	stopped chan struct{}
}

func newSerializer(wall bool) *serializer {
	s := &serializer{}
	if wall {
		s.wake = make(chan struct{}, 1)
		s.stop = make(chan struct{})
		s.stopped = make(chan struct{})
		go s.loop()
	}
	return s
}

// enqueue adds f to the queue. It never runs f itself.
func (s *serializer) enqueue(f func()) {
	s.mu.Lock()
	s.q = append(s.q, f)
	s.mu.Unlock()
	if s.wake != nil {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// drain runs queued functions until the queue is empty. A drain already under
// way (further up this goroutine's stack) makes it a no-op.
func (s *serializer) drain() {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running = true
	for len(s.q) > 0 {
		f := s.q[0]
		s.q[0] = nil
		s.q = s.q[1:]
		s.mu.Unlock()
		f()
		s.mu.Lock()
	}
	s.running = false
	s.mu.Unlock()
}

func (s *serializer) loop() {
	defer close(s.stopped)
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
			s.drain()
		}
	}
}

// close stops the wall-mode goroutine and waits for it.
func (s *serializer) close() {
	if s.stop != nil {
		close(s.stop)
		<-s.stopped
	}
}
