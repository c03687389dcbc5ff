package outlierdetection

import (
	"sync/atomic"

	"google.golang.org/grpc/balancer"
)

// picker is the child's picker, counting each call's result against the
// endpoint of the subchannel it went to, when it finishes (A50, Outlier
// Detection Behavior). The channel gets its own subchannel, not the
// wrapper. count is false when no algorithm is configured.
type picker struct {
	child balancer.Picker
	count bool
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	if p.child == nil {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	res, err := p.child.Pick(info)
	if err != nil {
		return res, err
	}
	s, ok := res.SubConn.(*subConn)
	if !ok {
		return res, nil
	}
	res.SubConn = s.SubConn
	if p.count {
		done := res.Done
		res.Done = func(di balancer.DoneInfo) {
			// Success is status OK (A50, Call Counter; the channel
			// reports any other status as an error).
			if ep := s.ep.Load(); ep != nil {
				ep.counter.add(di.Err == nil)
			}
			if done != nil {
				done(di)
			}
		}
	}
	return res, nil
}

// bucket holds one interval's call counts.
type bucket struct{ ok, fail atomic.Uint64 }

// callCounter is A50's Call Counter: the active bucket counts calls as
// they finish; at each interval it becomes the inactive one, read by the
// algorithms, and a zeroed bucket takes its place.
type callCounter struct {
	active   atomic.Pointer[bucket]
	inactive *bucket
}

func (c *callCounter) reset() {
	c.active.Store(&bucket{})
	c.inactive = &bucket{}
}

func (c *callCounter) add(ok bool) {
	b := c.active.Load()
	if ok {
		b.ok.Add(1)
	} else {
		b.fail.Add(1)
	}
}

func (c *callCounter) swap() { c.inactive = c.active.Swap(&bucket{}) }

// last returns the counts of the last complete interval.
func (c *callCounter) last() (ok, fail uint64) {
	return c.inactive.ok.Load(), c.inactive.fail.Load()
}
