package netlab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// probeWait is how long a probe waits for something that should not happen.
const probeWait = 300 * time.Millisecond

// probeGuard is how long a probe waits for something that should happen
// (the connection, the server's SETTINGS): only a guard against a hang. A
// loaded machine can hold the dial or the server's first frame past
// probeWait, which made a working address look hung or silent.
const probeGuard = 5 * time.Second

// outcome is what a client sees when it opens a connection to an address.
type outcome string

const (
	outEstablished outcome = "HTTP/2 answered"    // TCP up, server sent its SETTINGS
	outHangs       outcome = "connect hangs"      // SYN never answered
	outRefused     outcome = "connection refused" // TCP reset
	outStalled     outcome = "HTTP/2 silent"      // TCP up, server never speaks
)

// probe dials ap from the client namespace, sends the HTTP/2 preface, and
// classifies what happens. want is the outcome the caller expects: each
// wait is probeWait where want is the absence of the event waited for
// (hangs: no answer to the SYN; stalled: no frame from the server), and
// probeGuard where want is the event.
func probe(t *testing.T, l *Lab, ap netip.AddrPort, want outcome) outcome {
	t.Helper()
	dialWait, readWait := probeGuard, probeGuard
	switch want {
	case outHangs:
		dialWait = probeWait
	case outStalled:
		readWait = probeWait
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialWait)
	defer cancel()
	c, err := l.DialContext(ctx, "tcp", ap.String())
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return outRefused
	case isTimeout(err):
		return outHangs
	case err != nil:
		t.Fatalf("dial %s: unexpected error %v", ap, err)
	}
	defer c.Close()
	if _, err := c.Write(http2Preface); err != nil {
		t.Fatalf("write preface to %s: %v", ap, err)
	}
	c.SetReadDeadline(time.Now().Add(readWait))
	buf := make([]byte, 9) // one HTTP/2 frame header
	_, err = c.Read(buf)
	if isTimeout(err) {
		return outStalled
	}
	if err != nil {
		t.Fatalf("read from %s: %v", ap, err)
	}
	if buf[3] != 0x4 { // SETTINGS
		t.Fatalf("%s sent frame type %#x first, want SETTINGS", ap, buf[3])
	}
	return outEstablished
}

// TestLab_Faults_EachModeBothFamilies verifies each fault's effect on both
// families as seen from the client namespace, and that clearing restores service.
func TestLab_Faults_EachModeBothFamilies(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b2"}}})
	want := map[Fault]outcome{
		FaultNone: outEstablished, FaultDrop: outHangs, FaultReset: outRefused,
		FaultStall: outStalled, FaultDown: outRefused, FaultFailRPCs: outEstablished,
	}
	other := l.Backend("b2").Addrs()
	for _, f := range []Fault{FaultDrop, FaultReset, FaultStall, FaultDown, FaultFailRPCs} {
		for _, ap := range l.Backend("b1").Addrs() {
			t.Run(f.String()+"/"+family(ap), func(t *testing.T) {
				if err := l.SetFault(ap, f); err != nil {
					t.Fatal(err)
				}
				if got := probe(t, l, ap, want[f]); got != want[f] {
					t.Errorf("with %s on %s: %s, want %s", f, ap, got, want[f])
				}
				for _, o := range other { // faults are per address
					if got := probe(t, l, o, outEstablished); got != outEstablished {
						t.Errorf("with %s on %s, the untouched %s: %s", f, ap, o, got)
					}
				}
				if err := l.SetFault(ap, FaultNone); err != nil {
					t.Fatal(err)
				}
				if got := probe(t, l, ap, outEstablished); got != outEstablished {
					t.Errorf("after clearing %s on %s: %s, want %s", f, ap, got, outEstablished)
				}
			})
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func family(ap netip.AddrPort) string {
	if ap.Addr().Is6() {
		return "ipv6"
	}
	return "ipv4"
}

// TestLab_DropAndResetSpareEstablishedConnections verifies that drop and
// reset act on new connections only: a READY channel keeps working.
func TestLab_DropAndResetSpareEstablishedConnections(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1", Families: IPv4Only}}})
	ap := l.Backend("b1").Addrs()[0]
	cc := dialGRPC(t, l, ap.String())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := CallName(ctx, cc); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Fault{FaultDrop, FaultReset} {
		if err := l.SetFault(ap, f); err != nil {
			t.Fatal(err)
		}
		if name, err := CallName(ctx, cc); err != nil || name != "b1" {
			t.Errorf("with %s set, the established channel: %q, %v", f, name, err)
		}
	}
}

// TestLab_DownClosesLiveConnections verifies that down on an address, and a
// backend taken down, close the connections a READY channel holds.
func TestLab_DownClosesLiveConnections(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1", Families: IPv6Only}}})
	ap := l.Backend("b1").Addrs()[0]
	for _, takeDown := range []func() error{
		func() error { return l.SetFault(ap, FaultDown) },
		func() error { return l.SetBackendDown("b1", true) },
	} {
		cc := dialGRPC(t, l, ap.String())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := CallName(ctx, cc); err != nil {
			t.Fatal(err)
		}
		if err := takeDown(); err != nil {
			t.Fatal(err)
		}
		if !cc.WaitForStateChange(ctx, connectivity.Ready) {
			t.Errorf("channel stayed READY after its backend went down")
		}
		cancel()
		if got := probe(t, l, ap, outRefused); got != outRefused {
			t.Errorf("down address: %s, want %s", got, outRefused)
		}
		if err := l.SetFault(ap, FaultNone); err != nil {
			t.Fatal(err)
		}
		if err := l.SetBackendDown("b1", false); err != nil {
			t.Fatal(err)
		}
		if got := probe(t, l, ap, outEstablished); got != outEstablished {
			t.Errorf("back up: %s, want %s", got, outEstablished)
		}
	}
}

// TestLab_FaultEventsAreRecorded verifies that fault changes and backend
// activity appear in the event stream, in time order.
func TestLab_FaultEventsAreRecorded(t *testing.T) {
	prefaces := make(chan Event, 4)
	l := startLab(t, Config{
		Backends: []BackendConfig{{Name: "b1", Families: IPv4Only}},
		OnEvent: func(e Event) {
			if e.Kind == EventPreface {
				prefaces <- e
			}
		},
	})
	ap := l.Backend("b1").Addrs()[0]
	if err := l.SetFault(ap, FaultStall); err != nil {
		t.Fatal(err)
	}
	probe(t, l, ap, outStalled)
	if err := l.SetFault(ap, FaultNone); err != nil {
		t.Fatal(err)
	}
	probe(t, l, ap, outEstablished)
	select { // the server answers before it reads the preface: wait for it
	case <-prefaces:
	case <-time.After(5 * time.Second):
		t.Fatal("no preface event after a healthy probe")
	}
	var kinds []EventKind
	var last Duration
	for _, e := range l.Events() {
		if e.T < last {
			t.Errorf("event out of order: %v after %v", e, last)
		}
		last = e.T
		if e.Kind != EventConnClose { // the probes' closes race the next step
			kinds = append(kinds, e.Kind)
		}
	}
	want := []EventKind{EventFaultSet, EventAccept, EventFaultClear, EventAccept, EventPreface}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
}

// TestLab_ConnCloseIsTheClients verifies that a backend reports the client
// closing its connection (conn-close, naming the client's address), and not
// a connection the backend closed itself when it went down.
func TestLab_ConnCloseIsTheClients(t *testing.T) {
	closes := make(chan Event, 4)
	l := startLab(t, Config{
		Backends: []BackendConfig{{Name: "b1", Families: IPv4Only}},
		OnEvent: func(e Event) {
			if e.Kind == EventConnClose {
				closes <- e
			}
		},
	})
	ap := l.Backend("b1").Addrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	served := func() *grpc.ClientConn {
		cc := dialGRPC(t, l, ap.String())
		if _, err := CallName(ctx, cc); err != nil {
			t.Fatal(err)
		}
		return cc
	}
	cc := served()
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-closes:
		if e.Backend != "b1" || e.Addr != ap || !e.Peer.IsValid() {
			t.Errorf("conn-close %v, want b1 on %s with the client's address", e, ap)
		}
	case <-ctx.Done():
		t.Fatal("no conn-close after the client closed its channel")
	}
	cc = served()
	if err := l.SetBackendDown("b1", true); err != nil {
		t.Fatal(err)
	}
	if !cc.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("channel stayed READY after its backend went down")
	}
	cc.Close()
	var n int
	for _, e := range l.Events() {
		if e.Kind == EventConnClose {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d conn-close events, want 1 (the first channel's): the backend's own closes are not the client's", n)
	}
}

// TestLab_StartNamesTheBadField verifies Config validation.
func TestLab_StartNamesTheBadField(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Backends: []BackendConfig{{Name: "B1"}}}, "Config.Backends[0].Name"},
		{Config{Backends: []BackendConfig{{Name: "b1"}, {Name: "b1"}}}, "Config.Backends[1].Name"},
		{Config{Backends: []BackendConfig{{Name: "b1", Families: 7}}}, "Config.Backends[0].Families"},
		{Config{Port: 70000}, "Config.Port"},
		{Config{Clients: 999}, "Config.Clients"},
	} {
		_, err := Start(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

// TestLab_FailRPCs_AnswersWithCodeUntilCleared verifies fail_rpcs on one
// address, both families: over the channel it already had, every RPC on
// that address fails with the code (the health service aside) and is
// recorded as rpc-served with it; the backend's other address and the
// connection are untouched; clearing restores the answers.
func TestLab_FailRPCs_AnswersWithCodeUntilCleared(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1"}}})
	addrs := l.Backend("b1").Addrs()
	for i, ap := range addrs {
		t.Run(family(ap), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cc, other := dialGRPC(t, l, ap.String()), dialGRPC(t, l, addrs[1-i].String())
			if _, err := CallName(ctx, cc); err != nil {
				t.Fatal(err)
			}
			if err := l.FailRPCs(ap, codes.ResourceExhausted); err != nil {
				t.Fatal(err)
			}
			_, err := CallName(metadata.AppendToOutgoingContext(ctx, RPCHeader, "f1"), cc)
			if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != FailMessage(ap.String()) {
				t.Errorf("with fail_rpcs on %s: %v, want RESOURCE_EXHAUSTED %q", ap, err, FailMessage(ap.String()))
			}
			if name, err := CallName(ctx, other); err != nil || name != "b1" {
				t.Errorf("the untouched %s: %q, %v", addrs[1-i], name, err)
			}
			hc, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("the health service under fail_rpcs: %v, %v; want SERVING", hc, err)
			}
			if st := cc.GetState(); st != connectivity.Ready {
				t.Errorf("the channel under fail_rpcs is %v, want READY", st)
			}
			failed := slices.ContainsFunc(l.Events(), func(e Event) bool {
				return e.Kind == EventRPC && e.Addr == ap && e.Method == NameMethod && e.Code == codes.ResourceExhausted && e.RPC == "f1"
			})
			set := slices.ContainsFunc(l.Events(), func(e Event) bool {
				return e.Kind == EventFaultSet && e.Addr == ap && e.Fault == FaultFailRPCs && e.Code == codes.ResourceExhausted
			})
			if !failed || !set {
				t.Errorf("events: the failed RPC recorded with its code and name %v, the fault-set with its code %v", failed, set)
			}
			if err := l.SetFault(ap, FaultNone); err != nil {
				t.Fatal(err)
			}
			if name, err := CallName(ctx, cc); err != nil || name != "b1" {
				t.Errorf("after clearing fail_rpcs on %s: %q, %v", ap, name, err)
			}
		})
	}
	if err := l.FailRPCs(addrs[0], codes.OK); err == nil {
		t.Error("FailRPCs with OK: no error")
	}
}

// TestLab_BackendDownIsRecordedBeforeItsEffect verifies that backend-down
// carries the time the backend began going down, not the time it finished:
// a client sees its connection closed during SetBackendDown, and a check
// timing the client's reaction from backend-down must never find the
// reaction first (grpc-js failed over to p1 69 µs "before" b1 went down).
func TestLab_BackendDownIsRecordedBeforeItsEffect(t *testing.T) {
	l := startLab(t, Config{Backends: []BackendConfig{{Name: "b1", Families: IPv4Only}}})
	ap := l.Backend("b1").Addrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := l.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	closed := make(chan Duration, 1)
	go func() {
		_, _ = conn.Read(make([]byte, 1)) // the server never writes first: this returns when it closes
		closed <- l.Now()
	}()
	if err := l.SetBackendDown("b1", true); err != nil {
		t.Fatal(err)
	}
	var seen Duration
	select {
	case seen = <-closed:
	case <-ctx.Done():
		t.Fatal("the connection stayed open after its backend went down")
	}
	for _, e := range l.Events() {
		if e.Kind == EventBackendDown && e.T > seen {
			t.Errorf("backend-down at %v, after the client saw its connection closed at %v", e.T, seen)
		}
	}
}
