package report

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/conformlab/conform/harness/verdict"
)

// Display says how progress is shown.
type Display struct {
	// Terminal: the writer is a terminal, so a status line at the bottom
	// names what runs now, rewritten in place. Otherwise (a CI log, a pipe)
	// only the finished runs' lines are printed, plain.
	Terminal bool
	// Colour: verdicts in colour (on a terminal, unless NO_COLOR is set).
	Colour bool
	// Width is the terminal's width in columns; the status line is cut to
	// it (80 if 0).
	Width int
	// Now is the clock the elapsed times are read from (time.Now if nil).
	Now func() time.Time
}

// DisplayFor is the display for a writer: a terminal or not (isTerminal),
// colour unless noColour (the NO_COLOR environment variable is set, see
// https://no-color.org) or TERM is "dumb", which also gets no status line.
func DisplayFor(isTerminal bool, term string, noColour bool, width int) Display {
	tty := isTerminal && term != "dumb"
	return Display{Terminal: tty, Colour: tty && !noColour, Width: width}
}

// Live prints progress: a line per finished run (Progress's), and on a
// terminal a status line below them naming the runs in progress and how
// long each has been running, redrawn by Tick (Start runs a ticker that
// calls it every second). It is safe for concurrent use.
type Live struct {
	w       io.Writer
	d       Display
	mu      sync.Mutex
	running map[string]time.Time // "a61 he-dropped-ipv6 lab" → when it started
	shown   bool                 // a status line is on the screen
	stop    chan struct{}
	done    chan struct{}
}

// NewLive is progress on w, shown as d says.
func NewLive(w io.Writer, d Display) *Live {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Width <= 0 {
		d.Width = 80
	}
	return &Live{w: w, d: d, running: map[string]time.Time{}}
}

// Run starts the ticker that redraws the status line every second, on a
// terminal; Close stops it.
func (l *Live) Run() {
	if !l.d.Terminal || l.stop != nil {
		return
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.Tick()
			}
		}
	}()
}

// Close stops the ticker and clears the status line.
func (l *Live) Close() {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
}

func runKey(doc, spec, mode string) string {
	return strings.ToLower(doc) + " " + spec + " " + mode
}

// Started records that a run began.
func (l *Live) Started(doc, spec, mode string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[runKey(doc, spec, mode)] = l.d.Now()
	l.redraw()
}

// Finished prints r's line (Progress's, its verdicts in colour where the
// display has colour) and redraws the status line without it.
func (l *Live) Finished(r Run, took time.Duration, finished, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.running, runKey(r.Doc, r.Spec, string(r.Mode)))
	l.clear()
	var b bytes.Buffer
	Progress(&b, r, took, finished, total)
	line := b.String()
	if l.d.Colour {
		line = colourVerdicts(line)
	}
	io.WriteString(l.w, line)
	l.redraw()
}

// Tick redraws the status line with the elapsed times now.
func (l *Live) Tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.redraw()
}

// eraseLine returns the cursor to the line's start and erases the line
// (ANSI "EL"): a cursor movement, not a colour, so NO_COLOR keeps it.
const eraseLine = "\r\x1b[K"

func (l *Live) clear() {
	if l.shown {
		io.WriteString(l.w, eraseLine)
		l.shown = false
	}
}

// redraw rewrites the status line: "running 2: a61 he-dropped-ipv6 lab
// 3s · a62 sticky-tf lab 1s", cut to the terminal's width.
func (l *Live) redraw() {
	if !l.d.Terminal {
		return
	}
	if len(l.running) == 0 {
		l.clear()
		return
	}
	now := l.d.Now()
	keys := make([]string, 0, len(l.running))
	for k := range l.running {
		keys = append(keys, k)
	}
	// The longest-running first.
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := l.running[keys[i]], l.running[keys[j]]
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %ds", k, int(now.Sub(l.running[k]).Seconds()))
	}
	line := fmt.Sprintf("running %d: %s", len(keys), strings.Join(parts, " · "))
	if r := []rune(line); len(r) > l.d.Width-1 {
		line = string(r[:l.d.Width-2]) + "…"
	}
	io.WriteString(l.w, eraseLine+line)
	l.shown = true
}

// The colours of the verdicts on a terminal (SGR codes).
var verdictColour = map[verdict.Verdict]string{
	verdict.Pass: "32", verdict.Fail: "31", verdict.Inconclusive: "33",
	verdict.NotApplicable: "2", verdict.Error: "35",
}

// colourVerdicts colours the verdict counts of a progress line ("2 pass,
// 1 fail").
func colourVerdicts(line string) string {
	for _, v := range verdict.Verdicts {
		for _, sep := range []string{",", " "} {
			word := " " + string(v) + sep
			if i := strings.Index(line, word); i >= 0 {
				// the count before the word is coloured with it
				j := strings.LastIndexByte(line[:i], ' ') + 1
				line = line[:j] + "\x1b[" + verdictColour[v] + "m" + line[j:i] + word[:len(word)-len(sep)] + "\x1b[0m" + line[i+len(word)-len(sep):]
				break
			}
		}
	}
	return line
}
