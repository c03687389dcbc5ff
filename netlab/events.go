package netlab

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
)

// EventKind names what the lab observed.
type EventKind string

// The lab's events.
const (
	EventSYN         EventKind = "syn"          // capture: a SYN from Peer to Addr
	EventSYNACK      EventKind = "syn-ack"      // capture: Addr answered Peer's SYN
	EventRST         EventKind = "rst"          // capture: Addr refused Peer's SYN
	EventAccept      EventKind = "accept"       // backend: TCP connection from Peer accepted on Addr
	EventPreface     EventKind = "preface"      // backend: HTTP/2 client preface from Peer on Addr
	EventRPC         EventKind = "rpc-served"   // backend: Method served for Peer on Addr (failed with Code under FaultFailRPCs)
	EventConnClose   EventKind = "conn-close"   // backend: Peer closed its connection on Addr
	EventFaultSet    EventKind = "fault-set"    // Fault applied to Addr (FaultFailRPCs: answering with Code)
	EventFaultClear  EventKind = "fault-clear"  // the fault on Addr removed
	EventBackendDown EventKind = "backend-down" // Backend stopped listening everywhere
	EventBackendUp   EventKind = "backend-up"   // Backend listens again
	EventStall       EventKind = "stall"        // the machine ran no ready thread from T for Late (Config.WatchStalls)
	EventHealthSet   EventKind = "health-set"   // Addr's health service serves Serving for Service
	EventHealthSent  EventKind = "health-sent"  // backend: Addr's health service sent Peer (watching) Serving for Service
)

// Event is one observation, T after the lab started, on the lab's monotonic
// timebase. Addr is always the backend side; Peer the client side.
type Event struct {
	T          time.Duration
	Kind       EventKind
	Backend    string
	Addr       netip.AddrPort
	Peer       netip.AddrPort
	Method     string
	RPC        string // the RPCHeader an rpc-served request carried
	Fault      Fault
	Code       codes.Code // an RPC failed by FaultFailRPCs, or what that fault answers; OK otherwise
	Retransmit bool
	Late       time.Duration // a stall's length
	Service    string        // EventHealthSet, EventHealthSent: the health service name ("" the overall health)
	Serving    bool          // EventHealthSet, EventHealthSent: SERVING (true) or NOT_SERVING
}

func (e Event) String() string {
	s := fmt.Sprintf("%+10.3fms %-12s", float64(e.T)/float64(time.Millisecond), e.Kind)
	if e.Backend != "" {
		s += " " + e.Backend
	}
	if e.Addr.IsValid() {
		s += " " + e.Addr.String()
	}
	if e.Peer.IsValid() {
		s += " from " + e.Peer.String()
	}
	if e.Method != "" {
		s += " " + e.Method
	}
	if e.RPC != "" {
		s += " rpc=" + e.RPC
	}
	if e.Kind == EventFaultSet {
		s += " " + e.Fault.String()
	}
	if e.Kind == EventHealthSet || e.Kind == EventHealthSent {
		st := "NOT_SERVING"
		if e.Serving {
			st = "SERVING"
		}
		s += fmt.Sprintf(" service=%q %s", e.Service, st)
	}
	if e.Code != codes.OK {
		s += " " + e.Code.String()
	}
	if e.Retransmit {
		s += " (retransmit)"
	}
	if e.Kind == EventStall {
		s += " " + e.Late.String()
	}
	return s
}

// recorder keeps the lab's events on one timebase.
type recorder struct {
	start  time.Time // has a monotonic reading
	wall0  time.Time // start without it: the origin for kernel (realtime) stamps
	notify func(Event)

	mu     sync.Mutex
	events []Event
}

func newRecorder(notify func(Event)) *recorder {
	now := time.Now()
	return &recorder{start: now, wall0: now.Round(0), notify: notify}
}

// since is the lab time of a user-space observation made now.
func (r *recorder) now() time.Duration { return time.Since(r.start) }

// fromKernel converts a kernel CLOCK_REALTIME timestamp to lab time.
func (r *recorder) fromKernel(t time.Time) time.Duration { return t.Sub(r.wall0) }

func (r *recorder) add(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if r.notify != nil {
		r.notify(e)
	}
}

// snapshot returns the events in time order (stable for equal times).
func (r *recorder) snapshot() []Event {
	r.mu.Lock()
	out := slices.Clone(r.events)
	r.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Event) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	return out
}
