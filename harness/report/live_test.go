package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/report"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func lastStatus(out string) string {
	i := strings.LastIndex(out, "\r\x1b[K")
	return out[i+len("\r\x1b[K"):]
}
func hasColour(s string) bool                            { return strings.Contains(s, "\x1b[3") || strings.Contains(s, "\x1b[0m") }
func fixtureRun(i int) report.Run                        { return fixtureRuns()[i] }
func tick(l *report.Live, c *fakeClock, d time.Duration) { c.add(d); l.Tick() }

// TestLive_TerminalShowsWhatRunsNow drives the live display on a fake
// terminal: the status line names each running scenario with its elapsed
// time, longest-running first, is redrawn in place, is erased before a
// finished run's line (so that line stands alone, with its verdicts in
// colour), and is gone when nothing runs.
func TestLive_TerminalShowsWhatRunsNow(t *testing.T) {
	var w bytes.Buffer
	c := newClock()
	l := report.NewLive(&w, report.Display{Terminal: true, Colour: true, Width: 120, Now: c.now})
	a, b := fixtureRun(0), fixtureRun(5)
	l.Started(a.Doc, a.Spec, string(a.Mode))
	tick(l, c, 2*time.Second)
	l.Started(b.Doc, b.Spec, string(b.Mode))
	tick(l, c, time.Second)
	if got, want := lastStatus(w.String()), "running 2: a61 he-dropped-ipv6 sim 3s · a61 he-turn-idle lab 1s"; got != want {
		t.Errorf("status line %q, want %q", got, want)
	}
	l.Finished(a, 3*time.Second, 1, 2)
	out := w.String()
	i := strings.LastIndex(out, "[1/2]")
	if i < len("\r\x1b[K") || out[i-len("\r\x1b[K"):i] != "\r\x1b[K" {
		t.Errorf("the finished line does not start on an erased line:\n%q", out)
	}
	line := out[i : i+strings.Index(out[i:], "\n")]
	if !strings.Contains(line, "\x1b[32m1 pass\x1b[0m") || !strings.Contains(line, "\x1b[31m1 fail\x1b[0m") {
		t.Errorf("finished line %q: want its verdicts in colour", line)
	}
	if got, want := lastStatus(out), "running 1: a61 he-turn-idle lab 1s"; got != want {
		t.Errorf("after a run finished the status line is %q, want %q", got, want)
	}
	l.Finished(b, time.Second, 2, 2)
	l.Close()
	if s := lastStatus(w.String()); strings.Contains(s, "running") {
		t.Errorf("a status line is left after every run finished: %q", s)
	}
}

// TestLive_NarrowTerminalCutsTheStatusLine checks the status line fits the
// terminal's width.
func TestLive_NarrowTerminalCutsTheStatusLine(t *testing.T) {
	var w bytes.Buffer
	c := newClock()
	l := report.NewLive(&w, report.Display{Terminal: true, Width: 30, Now: c.now})
	l.Started("A61", "a-scenario-with-a-long-name", "lab")
	if s := []rune(lastStatus(w.String())); len(s) > 29 || s[len(s)-1] != '…' {
		t.Errorf("status line %q on a 30-column terminal", string(s))
	}
}

// TestLive_NotATerminalPrintsPlainLines checks that for a CI log or a pipe
// (and with NO_COLOR on a terminal) progress has no control sequences, or
// no colour: the same lines as Progress.
func TestLive_NotATerminalPrintsPlainLines(t *testing.T) {
	for _, c := range []struct {
		name     string
		d        report.Display
		status   bool
		coloured bool
	}{
		{"a pipe", report.DisplayFor(false, "xterm", false, 80), false, false},
		{"TERM=dumb", report.DisplayFor(true, "dumb", false, 80), false, false},
		{"NO_COLOR on a terminal", report.DisplayFor(true, "xterm", true, 80), true, false},
		{"a terminal", report.DisplayFor(true, "xterm-256color", false, 80), true, true},
	} {
		var w, plain bytes.Buffer
		l := report.NewLive(&w, c.d)
		for i, r := range fixtureRuns() {
			l.Started(r.Doc, r.Spec, string(r.Mode))
			l.Finished(r, time.Duration(i+1)*1234*time.Millisecond, i+1, 12)
			report.Progress(&plain, r, time.Duration(i+1)*1234*time.Millisecond, i+1, 12)
		}
		l.Close()
		out := w.String()
		if got := strings.Contains(out, "\r\x1b[K"); got != c.status {
			t.Errorf("%s: status line drawn %v, want %v", c.name, got, c.status)
		}
		if got := hasColour(out); got != c.coloured {
			t.Errorf("%s: colour %v, want %v", c.name, got, c.coloured)
		}
		if !c.status && out != plain.String() {
			t.Errorf("%s: progress is not Progress's plain lines:\n%q\nwant\n%q", c.name, out, plain.String())
		}
	}
}
