package capture

// Tracker folds packets into attempts exactly as a Capture does, for
// packets that come from elsewhere: a capture file read after the fact
// (harness/replay/pcap). One definition of an attempt and of a
// retransmission serves the live capture and the file. It has no answer
// deadline: only Close makes attempts Unanswered. It is not safe for
// concurrent use.
type Tracker struct{ t *tracker }

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker { return &Tracker{t: newTracker(0)} }

// Apply records p (a SYN, SYN-ACK or RST stamped in p.Kernel) and returns
// it with Retransmit set as the live capture would set it.
func (t *Tracker) Apply(p Packet) Packet { return t.t.apply(p) }

// Close marks every attempt still pending Unanswered: the record ended
// before an answer.
func (t *Tracker) Close() { t.t.closeAll() }

// Attempts returns a copy of the attempts so far, in the order their first
// SYN was applied.
func (t *Tracker) Attempts() []Attempt { return t.t.snapshot() }
