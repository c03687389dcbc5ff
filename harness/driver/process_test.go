package driver

import (
	"io"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// TestCommand_ReplyQueuedBeforeEOF_IsTheAnswer verifies that a reply the
// reader queued before it met the end of the driver's output answers the
// command, even though the reader has stopped by the time the command looks:
// a driver exits right after its reply to close. Both are ready when the
// command waits, so a wait that picks either at random would fail about
// every other time; the test repeats it.
func TestCommand_ReplyQueuedBeforeEOF_IsTheAnswer(t *testing.T) {
	for i := range 64 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, r)
		p := newProcess(ProcessOptions{Now: func() time.Duration { return 0 }, Record: func(trace.Event) {}, CommandTimeout: time.Second})
		p.stdin = w
		p.replies <- reply{id: 1}
		p.readErr = io.EOF
		close(p.done)
		if err := p.command(map[string]any{"op": "close"}, nil); err != nil {
			t.Fatalf("try %d: a queued reply was not taken as the answer: %v", i, err)
		}
		w.Close()
		r.Close()
	}
}

// TestHandle_StallIsTheIntervalEndingAtItsLine verifies that a driver's
// stall line (PROTOCOL.md, "Stalls") becomes a stall event that ends when
// the line is read (or ago_us before) and lasts late_us, and that a stall line without a
// positive late_us is refused as not the protocol.
func TestHandle_StallIsTheIntervalEndingAtItsLine(t *testing.T) {
	var got []trace.Event
	p := newProcess(ProcessOptions{Now: func() time.Duration { return 0 }, Record: func(e trace.Event) { got = append(got, e) }})
	if err := p.handle([]byte(`{"ev":"stall","late_us":12500}`), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	want := trace.Event{T: 2*time.Second - 12500*time.Microsecond, Source: trace.SourceDriver, Kind: trace.KindStall, Duration: 12500 * time.Microsecond}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("recorded %+v, want [%+v]", got, want)
	}
	got = nil // ago_us: the stall ended that long before the line
	if err := p.handle([]byte(`{"ev":"stall","late_us":12500,"ago_us":3000}`), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if want.T -= 3 * time.Millisecond; len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("with ago_us: recorded %+v, want [%+v]", got, want)
	}
	for _, bad := range []string{`{"ev":"stall"}`, `{"ev":"stall","late_us":0}`, `{"ev":"stall","late_us":-3}`, `{"ev":"stall","late_us":5000,"ago_us":-1}`} {
		if err := p.handle([]byte(bad), time.Second); err == nil {
			t.Errorf("%s: accepted, want an error", bad)
		}
	}
}
