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
