package capture

import (
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func synPkt(ms int, c, s netip.AddrPort, isn uint32) Packet {
	return Packet{Kernel: at(ms), Kind: SYN, Src: c, Dst: s, Seq: isn}
}

func answerPkt(ms int, k Kind, c, s netip.AddrPort) Packet {
	return Packet{Kernel: at(ms), Kind: k, Src: s, Dst: c}
}

// feed applies packets in order and returns them as the tracker passed them on.
func feed(tr *tracker, ps ...Packet) []Packet {
	out := make([]Packet, len(ps))
	for i, p := range ps {
		out[i] = tr.apply(p)
	}
	return out
}

func onlyAttempt(t *testing.T, tr *tracker) Attempt {
	t.Helper()
	as := tr.snapshot()
	if len(as) != 1 {
		t.Fatalf("got %d attempts, want 1: %+v", len(as), as)
	}
	return as[0]
}

// TestTracker_SYNACKEstablishes verifies a SYN answered by a SYN-ACK from
// the server is one Established attempt stamped with the answer's time.
func TestTracker_SYNACKEstablishes(t *testing.T) {
	tr := newTracker(0)
	feed(tr, synPkt(0, client4, server4, 1), answerPkt(2, SYNACK, client4, server4))
	want := Attempt{Client: client4, Server: server4, FirstSYN: at(0), SYNs: 1, Outcome: Established, Answered: at(2)}
	if a := onlyAttempt(t, tr); a != want {
		t.Fatalf("attempt = %+v, want %+v", a, want)
	}
}

// TestTracker_RSTResets verifies an RST from the server ends the attempt Reset.
func TestTracker_RSTResets(t *testing.T) {
	tr := newTracker(0)
	feed(tr, synPkt(0, client6, server6, 1), answerPkt(1, RST, client6, server6))
	if a := onlyAttempt(t, tr); a.Outcome != Reset || !a.Answered.Equal(at(1)) {
		t.Fatalf("attempt = %+v, want Reset at %v", a, at(1))
	}
}

// TestTracker_RetransmitsCountedThenUnansweredAtClose verifies repeated SYNs
// with one ISN are flagged and counted, and Close makes the attempt Unanswered.
func TestTracker_RetransmitsCountedThenUnansweredAtClose(t *testing.T) {
	tr := newTracker(0)
	out := feed(tr, synPkt(0, client4, server4, 5), synPkt(1000, client4, server4, 5), synPkt(3000, client4, server4, 5))
	if out[0].Retransmit || !out[1].Retransmit || !out[2].Retransmit {
		t.Fatalf("Retransmit flags = %v %v %v, want false true true", out[0].Retransmit, out[1].Retransmit, out[2].Retransmit)
	}
	if a := onlyAttempt(t, tr); a.Outcome != Pending || a.SYNs != 3 {
		t.Fatalf("before close: %+v, want Pending with 3 SYNs", a)
	}
	tr.closeAll()
	if a := onlyAttempt(t, tr); a.Outcome != Unanswered || !a.Answered.IsZero() {
		t.Fatalf("after close: %+v, want Unanswered, not answered", a)
	}
}

// TestTracker_ReusedPortAfterOutcomeIsNewAttempt verifies a SYN from the same
// client port after an answer starts a second attempt, not a retransmission.
func TestTracker_ReusedPortAfterOutcomeIsNewAttempt(t *testing.T) {
	tr := newTracker(0)
	out := feed(tr,
		synPkt(0, client4, server4, 1), answerPkt(1, RST, client4, server4),
		synPkt(5, client4, server4, 1), answerPkt(6, SYNACK, client4, server4))
	as := tr.snapshot()
	if out[2].Retransmit || len(as) != 2 || as[0].Outcome != Reset || as[1].Outcome != Established {
		t.Fatalf("retransmit=%v attempts=%+v; want two attempts, Reset then Established", out[2].Retransmit, as)
	}
}

// TestTracker_NewISNEndsOpenAttempt verifies a SYN with a new initial sequence
// number on the same addresses ends the unanswered attempt and starts another.
func TestTracker_NewISNEndsOpenAttempt(t *testing.T) {
	tr := newTracker(0)
	out := feed(tr, synPkt(0, client4, server4, 1), synPkt(10, client4, server4, 2))
	as := tr.snapshot()
	if out[1].Retransmit || len(as) != 2 || as[0].Outcome != Unanswered || as[1].Outcome != Pending {
		t.Fatalf("retransmit=%v attempts=%+v; want Unanswered then Pending", out[1].Retransmit, as)
	}
}

// TestTracker_AnswersMatchOnlyTheirAttempt verifies answers are matched by
// both addresses: a reply to another port or server leaves the attempt alone,
// and a client's own RST does not count as an answer.
func TestTracker_AnswersMatchOnlyTheirAttempt(t *testing.T) {
	tr := newTracker(0)
	other := netip.AddrPortFrom(client4.Addr(), client4.Port()+1)
	feed(tr, synPkt(0, client4, server4, 1),
		answerPkt(1, SYNACK, other, server4),
		answerPkt(2, RST, client4, netip.MustParseAddrPort("198.18.0.3:443")),
		Packet{Kernel: at(3), Kind: RST, Src: client4, Dst: server4})
	if a := onlyAttempt(t, tr); a.Outcome != Pending {
		t.Fatalf("attempt = %+v, want Pending", a)
	}
}

// TestTracker_DeadlineMakesUnansweredAndKeepsCounting verifies an attempt
// with no answer within the deadline turns Unanswered on a later packet, its
// retransmissions still count, and a later SYN-ACK does not change it.
func TestTracker_DeadlineMakesUnansweredAndKeepsCounting(t *testing.T) {
	tr := newTracker(500 * time.Millisecond)
	out := feed(tr, synPkt(0, client4, server4, 1), synPkt(1000, client4, server4, 1))
	if a := onlyAttempt(t, tr); a.Outcome != Unanswered || a.SYNs != 2 || !out[1].Retransmit {
		t.Fatalf("attempt = %+v (retransmit %v), want Unanswered with 2 SYNs", a, out[1].Retransmit)
	}
	feed(tr, answerPkt(1001, SYNACK, client4, server4))
	if a := onlyAttempt(t, tr); a.Outcome != Unanswered || !a.Answered.IsZero() {
		t.Fatalf("after late SYN-ACK: %+v, want still Unanswered", a)
	}
}

// TestTracker_AnswerStampedBeforeDeadlineWins verifies an answer the kernel
// stamped within the deadline counts even when read after expiry was noticed.
func TestTracker_AnswerStampedBeforeDeadlineWins(t *testing.T) {
	tr := newTracker(500 * time.Millisecond)
	feed(tr, synPkt(0, client4, server4, 1))
	tr.expire(at(600))
	feed(tr, answerPkt(400, SYNACK, client4, server4))
	if a := onlyAttempt(t, tr); a.Outcome != Established || !a.Answered.Equal(at(400)) {
		t.Fatalf("attempt = %+v, want Established at %v", a, at(400))
	}
}

// TestTracker_SnapshotIsACopy verifies callers cannot change recorded attempts.
func TestTracker_SnapshotIsACopy(t *testing.T) {
	tr := newTracker(0)
	feed(tr, synPkt(0, client4, server4, 1))
	tr.snapshot()[0].SYNs = 99
	if a := onlyAttempt(t, tr); a.SYNs != 1 {
		t.Fatalf("SYNs = %d after editing a snapshot, want 1", a.SYNs)
	}
}
