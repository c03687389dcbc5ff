package driver

import (
	"io"
	"os"
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
