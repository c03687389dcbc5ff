package capture

import (
	"net/netip"
	"time"
)

// conn names an attempt by its addresses, client first.
type conn struct {
	client, server netip.AddrPort
}

// open is an attempt that has not seen its answer yet.
type open struct {
	index   int    // into tracker.attempts
	isn     uint32 // initial sequence number of its SYNs
	expired bool   // marked Unanswered by the deadline
}

// tracker folds packets into attempts. It is not safe for concurrent use.
type tracker struct {
	deadline time.Duration // 0: no deadline, only Close ends an attempt
	attempts []Attempt     // in the order their first SYN was read
	open     map[conn]*open
}

func newTracker(deadline time.Duration) *tracker {
	return &tracker{deadline: deadline, open: map[conn]*open{}}
}

// apply records p and returns it with Retransmit set.
func (t *tracker) apply(p Packet) Packet {
	t.expire(p.Kernel)
	switch p.Kind {
	case SYN:
		return t.syn(p)
	case SYNACK:
		t.answer(conn{client: p.Dst, server: p.Src}, Established, p.Kernel)
	case RST:
		p.Refusal = t.answer(conn{client: p.Dst, server: p.Src}, Reset, p.Kernel)
	}
	return p
}

// syn counts a retransmission of an open attempt or starts a new attempt.
// A SYN with a new initial sequence number ends the open attempt on the
// same addresses as Unanswered.
func (t *tracker) syn(p Packet) Packet {
	key := conn{client: p.Src, server: p.Dst}
	if o, ok := t.open[key]; ok {
		if o.isn == p.Seq {
			t.attempts[o.index].SYNs++
			p.Retransmit = true
			return p
		}
		t.settle(key, Unanswered, time.Time{})
	}
	t.open[key] = &open{index: len(t.attempts), isn: p.Seq}
	t.attempts = append(t.attempts, Attempt{
		Client: p.Src, Server: p.Dst, FirstSYN: p.Kernel, SYNs: 1,
	})
	return p
}

// answer ends the open attempt on key with outcome, unless the answer came
// after the deadline had already made it Unanswered, and reports whether it
// ended one.
func (t *tracker) answer(key conn, outcome Outcome, at time.Time) bool {
	o, ok := t.open[key]
	if !ok {
		return false
	}
	if o.expired && t.late(t.attempts[o.index], at) {
		delete(t.open, key)
		return false
	}
	t.settle(key, outcome, at)
	return true
}

// settle gives the open attempt on key its outcome and closes it.
func (t *tracker) settle(key conn, outcome Outcome, at time.Time) {
	a := &t.attempts[t.open[key].index]
	a.Outcome, a.Answered = outcome, at
	delete(t.open, key)
}

// expire marks Unanswered every open attempt whose deadline passed by now.
// Such attempts stay open to count retransmissions; an answer that the
// kernel stamped before the deadline still wins when it is read later.
func (t *tracker) expire(now time.Time) {
	if t.deadline <= 0 {
		return
	}
	for _, o := range t.open {
		a := &t.attempts[o.index]
		if !o.expired && t.late(*a, now) {
			o.expired = true
			a.Outcome = Unanswered
		}
	}
}

// late reports whether at is past a's answer deadline.
func (t *tracker) late(a Attempt, at time.Time) bool {
	return t.deadline > 0 && at.Sub(a.FirstSYN) > t.deadline
}

// closeAll marks every attempt still pending Unanswered and forgets them.
func (t *tracker) closeAll() {
	for key, o := range t.open {
		if !o.expired {
			t.attempts[o.index].Outcome = Unanswered
		}
		delete(t.open, key)
	}
}

// snapshot returns a copy of the attempts so far.
func (t *tracker) snapshot() []Attempt {
	return append([]Attempt(nil), t.attempts...)
}
