package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Error is a problem at one line of a trace file.
type Error struct {
	File   string
	Line   int // 1-based
	Reason string
}

// Error renders "file:line: reason".
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
}

// ReadFile reads the trace at path strictly (see Read).
func ReadFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads a trace strictly: line 1 is a header of this schema version,
// every other line one event of a known source and kind, in time order, with
// no field this format does not define, each line ended by a newline.
// Problems are *Error naming file (as given) and line.
//
// One exception: a field trace (ModeField) whose last line has no newline
// is read up to its last whole line. Its writer, a production client's
// recorder, appends lines as they come and may die in the middle of one; a
// lab or simulated trace is written atomically and is never cut.
func Read(file string, r io.Reader) (*Trace, error) {
	rd := &lineReader{r: bufio.NewReaderSize(r, 64<<10), file: file}
	line, err := rd.next()
	if errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Line: 1, Reason: "empty trace: missing header"}
	}
	if err != nil {
		return nil, err
	}
	t := &Trace{}
	if err := decodeHeader(line, &t.Header); err != nil {
		return nil, rd.errf("%v", err)
	}
	for {
		line, err := rd.next()
		if errors.Is(err, io.EOF) || rd.cut && t.Header.Mode == ModeField {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		ev, err := decodeEvent(line)
		if err != nil {
			return nil, rd.errf("%v", err)
		}
		if n := len(t.Events); n > 0 && ev.T < t.Events[n-1].T {
			return nil, rd.errf("event at t=%d is before the previous event (t=%d): out of time order", ev.T, t.Events[n-1].T)
		}
		t.Events = append(t.Events, ev)
	}
}

// lineReader yields the lines of a trace without their newline.
type lineReader struct {
	r    *bufio.Reader
	file string
	line int
	buf  []byte
	cut  bool // the last line has no newline
}

func (l *lineReader) errf(format string, args ...any) *Error {
	return &Error{File: l.file, Line: l.line, Reason: fmt.Sprintf(format, args...)}
}

// next returns the next line, io.EOF at the end, or an *Error for an empty
// line or a last line without its newline (a file cut short).
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.buf = append(l.buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(l.buf) == 0 {
			return nil, io.EOF
		}
		l.line++
		if errors.Is(err, io.EOF) {
			l.cut = true
			return nil, l.errf("last line has no newline: the file is cut short")
		}
		if err != nil {
			return nil, l.errf("%v", err)
		}
		if len(l.buf) == 1 {
			return nil, l.errf("empty line")
		}
		return l.buf[:len(l.buf)-1], nil
	}
}

// decodeJSON decodes one JSON object that must fill the whole line.
func decodeJSON(line []byte, v any, fields []string) error {
	if err := json.Unmarshal(line, v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syn) || errors.As(err, &typ) {
			return fmt.Errorf("malformed JSON: %v", err)
		}
		return err
	}
	return checkKeys(line, fields)
}

func decodeHeader(line []byte, h *Header) error {
	if isEvent(line) {
		return fmt.Errorf("missing header: line 1 is an event")
	}
	if isObject(line) && !isHeader(line) {
		return fmt.Errorf(`not a trace: line 1 is a JSON object without "schema", which a trace's header starts with`)
	}
	if err := decodeJSON(line, h, headerFields); err != nil {
		return fmt.Errorf("header: %v", err)
	}
	if len(h.Env) == 0 {
		h.Env = nil
	}
	if len(h.Shows) == 0 {
		h.Shows = nil
	}
	return h.check()
}

// rawEvent tells a missing "t" from t=0; its T shadows Event's.
type rawEvent struct {
	T *time.Duration `json:"t"`
	Event
}

func decodeEvent(line []byte) (Event, error) {
	var raw rawEvent
	if err := decodeJSON(line, &raw, eventFields); err != nil {
		if isHeader(line) {
			return Event{}, errors.New("duplicate header: only line 1 may be a header")
		}
		return Event{}, err
	}
	ev := raw.Event
	switch {
	case raw.T == nil:
		return ev, errors.New(`missing "t"`)
	case *raw.T < 0:
		return ev, fmt.Errorf("negative time %d", *raw.T)
	case !ev.Source.Known():
		return ev, fmt.Errorf("unknown source %q", ev.Source)
	case !ev.Kind.Known():
		return ev, fmt.Errorf("unknown kind %q", ev.Kind)
	}
	ev.T = *raw.T
	if len(ev.Addrs) == 0 {
		ev.Addrs = nil
	}
	if len(ev.SessionAddrs) == 0 {
		ev.SessionAddrs = nil
	}
	if len(ev.Endpoints) == 0 {
		ev.Endpoints = nil
	}
	return ev, nil
}

// isHeader reports whether a line is an object with a "schema" key.
func isHeader(line []byte) bool {
	return hasKey(line, "schema")
}

// isEvent reports whether a line is an object with a "kind" key.
func isEvent(line []byte) bool {
	return hasKey(line, "kind")
}

// isObject reports whether a line is a JSON object.
func isObject(line []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(line, &m) == nil
}

func hasKey(line []byte, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}
