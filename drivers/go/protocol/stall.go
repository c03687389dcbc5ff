package protocol

import "time"

// The driver's stall watch (PROTOCOL.md, "stall"): a goroutine of the
// driver's own process sleeps in steps of stallStep on a Go timer and
// measures how late each wake-up is; a wake-up stallThreshold late or more
// is written as a stall event. conform's lab runs the same watch in its own
// process (netlab's stall watch), which cannot see this process's stalls:
// with this one, a timer check on a driver is inconclusive where the
// driver's own process stood still, as it is for a client in conform's
// process (suites/spec, RequireSteadyMachine). The figures are netlab's
// (netlab/stall.go), so the two watches mean the same.
const (
	stallStep      = 2 * time.Millisecond
	stallThreshold = 4 * time.Millisecond
)

// watchStalls emits a stall event for each late wake-up until stop is
// closed; done is closed when the watch has ended. It returns once the
// watch's first timer is set, so that hello's claim of stall_watch holds
// from the first command: a goroutine only started could not see a stall
// that came before it first ran (CI: a driver stopped right after hello
// reported nothing).
func (s *Session) watchStalls(stop <-chan struct{}) (done <-chan struct{}) {
	d, running := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d)
		t := time.NewTimer(stallStep)
		defer t.Stop()
		before := time.Now()
		close(running)
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if late := time.Since(before) - stallStep; late >= stallThreshold {
				s.emit(map[string]any{"ev": "stall", "late_us": late.Microseconds()})
			}
			before = time.Now()
			t.Reset(stallStep)
		}
	}()
	<-running
	return d
}
