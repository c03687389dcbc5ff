package capture

import (
	"net/netip"
	"testing"
)

// TestTracker_ExportedFoldsAsTheCapture verifies the exported Tracker marks
// a repeated SYN a retransmission, settles the attempt on the SYN-ACK, and
// leaves an attempt never answered Unanswered at Close.
func TestTracker_ExportedFoldsAsTheCapture(t *testing.T) {
	c1 := netip.MustParseAddrPort("198.18.0.1:40001")
	c2 := netip.MustParseAddrPort("198.18.0.1:40002")
	s := netip.MustParseAddrPort("198.19.0.1:50051")
	tr := NewTracker()
	tr.Apply(synPkt(0, c1, s, 7))
	if p := tr.Apply(synPkt(1000, c1, s, 7)); !p.Retransmit {
		t.Fatalf("second SYN with the same ISN: Retransmit false, want true")
	}
	tr.Apply(answerPkt(1001, SYNACK, c1, s))
	tr.Apply(synPkt(1002, c2, s, 9))
	tr.Close()
	as := tr.Attempts()
	if len(as) != 2 {
		t.Fatalf("got %d attempts, want 2: %+v", len(as), as)
	}
	if as[0].Outcome != Established || as[0].SYNs != 2 || !as[0].Answered.Equal(at(1001)) {
		t.Errorf("first attempt %+v, want established after 2 SYNs at 1001 ms", as[0])
	}
	if as[1].Outcome != Unanswered {
		t.Errorf("second attempt %v, want unanswered", as[1].Outcome)
	}
}

// TestTracker_RefusalIsAnRSTAnsweringASYN verifies that an RST is a
// refusal only when it answers an attempt still waiting for its answer: an
// RST that aborts an established connection (a backend stopped under it)
// is not, so it is never read as a connection attempt's fate.
func TestTracker_RefusalIsAnRSTAnsweringASYN(t *testing.T) {
	c1 := netip.MustParseAddrPort("198.18.0.1:40001")
	c2 := netip.MustParseAddrPort("198.18.0.1:40002")
	s := netip.MustParseAddrPort("198.19.0.1:50051")
	tr := NewTracker()
	tr.Apply(synPkt(0, c1, s, 7))
	tr.Apply(answerPkt(1, SYNACK, c1, s))
	if p := tr.Apply(answerPkt(500, RST, c1, s)); p.Refusal {
		t.Errorf("RST of an established connection: Refusal true, want false")
	}
	tr.Apply(synPkt(501, c2, s, 9))
	if p := tr.Apply(answerPkt(502, RST, c2, s)); !p.Refusal {
		t.Errorf("RST answering a SYN: Refusal false, want true")
	}
	if p := tr.Apply(answerPkt(503, RST, c2, s)); p.Refusal {
		t.Errorf("a second RST on an attempt already refused: Refusal true, want false")
	}
	if as := tr.Attempts(); as[0].Outcome != Established || as[1].Outcome != Reset {
		t.Errorf("outcomes %v, %v; want established, reset", as[0].Outcome, as[1].Outcome)
	}
}
