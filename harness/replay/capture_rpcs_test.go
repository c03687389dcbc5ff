package replay_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

const ms = time.Millisecond

// wire builds capture events of connections from client 198.18.0.2.
type wire []trace.Event

func (w *wire) add(t time.Duration, src trace.Source, k trace.Kind, addr string, port int, rpc string) {
	peer := ""
	if port != 0 {
		peer = "198.18.0.2:" + strconv.Itoa(port)
	}
	e := trace.Event{T: t, Source: src, Kind: k, Addr: addr, RPC: rpc, Peer: peer}
	if src == trace.SourceCapture {
		e.Port = port
	}
	*w = append(*w, e)
}

// connect adds a connection's SYN, SYN-ACK (rtt later) and preface.
func (w *wire) connect(t, rtt time.Duration, addr string, port int) {
	w.add(t, trace.SourceCapture, trace.KindSYN, addr, port, "")
	w.add(t+rtt, trace.SourceCapture, trace.KindSYNACK, addr, port, "")
	w.add(t+rtt, trace.SourceBackend, trace.KindPreface, addr, port, "")
}

// rpc adds an RPC's request at t and its result 1 ms later.
func (w *wire) rpc(t time.Duration, addr string, port int, id string) {
	w.add(t, trace.SourceBackend, trace.KindRPCServed, addr, port, id)
	w.add(t+ms, trace.SourceDriver, trace.KindRPCResult, addr, port, id)
}

func rpcTimes(s *scenario.Scenario) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, st := range s.Steps {
		if r, ok := st.Action.(scenario.StartRPC); ok {
			out[r.ID] = st.At
			if !r.WaitForReady {
				out[r.ID] = -1
			}
		}
	}
	return out
}

// TestFromCapture_RPCTimes verifies each captured RPC is placed as its
// evidence allows: one whose request left as its connection became ready
// waited for it, from the capture's first attempt (r1) or the first
// attempt after the last sign of a working connection (r3); one whose
// request left on a connection ready long before was sent then (r2); one
// whose request the capture lacks, at the first attempt (r4). All are
// wait-for-ready, and the description says which rule placed each.
func TestFromCapture_RPCTimes(t *testing.T) {
	v6, v4 := "[fd00:c0f::1]:443", "198.18.0.1:443"
	var w wire
	w.add(0, trace.SourceCapture, trace.KindSYN, v6, 40000, "") // never answered
	w.connect(250*ms, ms, v4, 40001)
	w.rpc(252*ms+500*time.Microsecond, v4, 40001, "r1") // as the connection became ready (252 ms)
	w.rpc(5*time.Second, v4, 40001, "r2")               // long after
	w.add(6*time.Second, trace.SourceCapture, trace.KindRST, v4, 40001, "")
	w.add(7*time.Second-time.Second, trace.SourceCapture, trace.KindSYN, v4, 40002, "") // lost, then retransmitted
	w.connect(7*time.Second, ms, v4, 40002)
	w.rpc(7*time.Second+2*ms, v4, 40002, "r3")
	w.add(8*time.Second, trace.SourceDriver, trace.KindRPCResult, v4, 40002, "r4")
	s, _, err := replay.FromCapture(w)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"r1": 0, "r2": 5 * time.Second, "r3": 6 * time.Second, "r4": 0}
	got := rpcTimes(s)
	for id, at := range want {
		if got[id] != at {
			t.Errorf("RPC %s at %v (-1: not wait-for-ready), want %v, wait-for-ready", id, got[id], at)
		}
	}
	for _, say := range []string{"connection to 198.18.0.1:443 became ready (about +7.002s)", "RPC r1 at +0.0ms: its request left at +252.5ms as its connection", "capture's first attempt",
		"RPC r2 at +5.000s", "sent then, on a ready connection", "RPC r3 at +6.000s", "last sign of a working connection (+5.001s)",
		"RPC r4 at +0.0ms: its request is not in the capture"} {
		if !strings.Contains(s.Description, say) {
			t.Errorf("description lacks %q:\n%s", say, s.Description)
		}
	}
}
