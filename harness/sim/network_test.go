package sim

import (
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// connectOnce resolves one endpoint with addrs for the (non-reconnecting)
// test policy and lets d pass.
func connectOnce(t *testing.T, w *Channel, d time.Duration, addrs ...string) []trace.Event {
	t.Helper()
	if err := w.ResolveEndpoints(addrs); err != nil {
		t.Fatal(err)
	}
	w.Advance(d)
	return w.Events()
}

func wantTimes(t *testing.T, what string, got []time.Duration, want ...time.Duration) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s at %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s at %v, want %v", what, got, want)
		}
	}
}

func synTimes(ev []trace.Event, addr string) (at []time.Duration, retransmits int) {
	for _, e := range kinds(ev, trace.KindSYN, "") {
		if e.Addr == addr {
			at = append(at, e.T)
			if e.Retransmit {
				retransmits++
			}
		}
	}
	return at, retransmits
}

// TestNetwork_DropHangsUntilConnectDeadline verifies that a dropped address
// retransmits its SYN at 1, 3, 7, 15 s and fails only at the 20 s minimum
// connect timeout.
func TestNetwork_DropHangsUntilConnectDeadline(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultDrop)
	ev := connectOnce(t, w, 21*time.Second, addrA)
	wantTimes(t, "TRANSIENT_FAILURE", stateTimes(ev, "sc1", "TRANSIENT_FAILURE"), 20*time.Second)
	syns, re := synTimes(ev, addrA)
	wantTimes(t, "SYNs", syns, 0, time.Second, 3*time.Second, 7*time.Second, 15*time.Second)
	if re != 4 {
		t.Fatalf("%d SYNs marked as retransmissions, want 4", re)
	}
	if tf := kinds(ev, trace.KindSubchannelState, "sc1")[1]; tf.Err != errConnectDeadline.Error() {
		t.Fatalf("TRANSIENT_FAILURE error = %q, want %q", tf.Err, errConnectDeadline)
	}
}

// TestNetwork_ResetFailsAfterOneRTT verifies that a reset address fails the
// attempt one RTT after the SYN, with a recorded RST.
func TestNetwork_ResetFailsAfterOneRTT(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1, RTT: 3 * time.Millisecond})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultReset)
	ev := connectOnce(t, w, 100*time.Millisecond, addrA)
	wantTimes(t, "TRANSIENT_FAILURE", stateTimes(ev, "sc1", "TRANSIENT_FAILURE"), 3*time.Millisecond)
	if rst := kinds(ev, trace.KindRST, "sc1"); len(rst) != 1 || rst[0].T != 3*time.Millisecond {
		t.Fatalf("RSTs = %v, want one at 3ms", rst)
	}
}

// TestNetwork_DownRefusesAfterOneRTT verifies that an address with nothing
// listening fails the attempt one RTT after the SYN.
func TestNetwork_DownRefusesAfterOneRTT(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultDown)
	ev := connectOnce(t, w, time.Second, addrA)
	wantTimes(t, "TRANSIENT_FAILURE", stateTimes(ev, "sc1", "TRANSIENT_FAILURE"), time.Millisecond)
}

// TestNetwork_StallFailsAtConnectDeadline verifies that a stalled address
// completes TCP after one RTT but fails only at the 20 s connect deadline.
func TestNetwork_StallFailsAtConnectDeadline(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultStall)
	ev := connectOnce(t, w, 25*time.Second, addrA)
	if acks := kinds(ev, trace.KindSYNACK, "sc1"); len(acks) != 1 || acks[0].T != time.Millisecond {
		t.Fatalf("SYN-ACKs = %v, want one at 1ms", acks)
	}
	wantTimes(t, "READY", stateTimes(ev, "sc1", "READY"))
	wantTimes(t, "TRANSIENT_FAILURE", stateTimes(ev, "sc1", "TRANSIENT_FAILURE"), 20*time.Second)
}

// TestNetwork_ClearingDropConnectsAtNextRetransmission verifies that a drop
// cleared mid-attempt is noticed at the next SYN retransmission (3 s), and
// the subchannel is READY two RTTs later.
func TestNetwork_ClearingDropConnectsAtNextRetransmission(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA)
	w.SetFault(addrA, FaultDrop)
	connectOnce(t, w, 2*time.Second, addrA)
	w.SetFault(addrA, FaultNone)
	w.Advance(10 * time.Second)
	ev := w.Events()
	wantTimes(t, "READY", stateTimes(ev, "sc1", "READY"), 3*time.Second+2*time.Millisecond)
	syns, _ := synTimes(ev, addrA)
	wantTimes(t, "SYNs", syns, 0, time.Second, 3*time.Second)
}

// TestNetwork_DownKillsReadyConnection verifies that setting down on the
// address of a READY subchannel makes it IDLE at once, and an RPC in flight
// on it fails UNAVAILABLE.
func TestNetwork_DownKillsReadyConnection(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1, RTT: 10 * time.Millisecond})
	w.AddBackend("b0", addrA)
	connectOnce(t, w, time.Second, addrA)
	w.StartRPC("r1", RPCOptions{})
	w.Advance(5 * time.Millisecond)
	w.SetFault(addrA, FaultDown)
	w.Advance(time.Second)
	ev := w.Events()
	wantTimes(t, "IDLE", stateTimes(ev, "sc1", "IDLE"), 1005*time.Millisecond)
	res := kinds(ev, trace.KindRPCResult, "")
	if len(res) != 1 || res[0].Code != "UNAVAILABLE" {
		t.Fatalf("rpc results = %v, want one UNAVAILABLE\n%s", res, dump(ev))
	}
}

// TestNetwork_SubchannelTriesAddressesInOrder verifies that one attempt
// tries a subchannel's addresses in order and connects to the first that
// answers.
func TestNetwork_SubchannelTriesAddressesInOrder(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	w.AddBackend("b0", addrA, addr6)
	w.SetFault(addrA, FaultReset)
	ev := connectOnce(t, w, time.Second, addrA, addr6)
	var got []string
	for _, e := range ev {
		if e.Source == trace.SourceCapture || e.Kind == trace.KindSubchannelState {
			got = append(got, string(e.Kind)+" "+e.Addr+e.State)
		}
	}
	want := []string{"subchannel-state CONNECTING", "syn " + addrA, "rst " + addrA, "syn " + addr6, "syn-ack " + addr6, "subchannel-state " + addr6 + "READY"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// TestNetwork_UnownedAddressNeverAnswers verifies that an address no backend
// owns behaves as dropped.
func TestNetwork_UnownedAddressNeverAnswers(t *testing.T) {
	w := newChannel(t, `{}`, Options{Seed: 1})
	ev := connectOnce(t, w, 21*time.Second, addrB)
	wantTimes(t, "TRANSIENT_FAILURE", stateTimes(ev, "sc1", "TRANSIENT_FAILURE"), 20*time.Second)
}
