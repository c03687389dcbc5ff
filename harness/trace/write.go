package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"
)

// Canonical is the canonical serialization of t: the header line, then one
// line per event; keys in the order of the Go structs, empty fields left
// out, integers only, no HTML escaping, "\n" after every line. Reading a
// canonical file and writing it again gives the same bytes, so golden traces
// diff cleanly. It fails only for a header or event that Read would refuse.
func Canonical(t *Trace) ([]byte, error) {
	var buf bytes.Buffer
	enc, err := NewEncoder(&buf, t.Header)
	if err != nil {
		return nil, err
	}
	for _, ev := range t.Events {
		if err := enc.Encode(ev); err != nil {
			return nil, err
		}
	}
	if err := enc.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Encoder writes a trace in canonical form as it is recorded. It refuses
// what Read would refuse (unknown kinds and sources, events out of time
// order), so a trace it wrote can always be read back.
type Encoder struct {
	w     *bufio.Writer
	je    *json.Encoder
	n     int // events written
	lastT time.Duration
}

// NewEncoder writes the header h to w and returns an encoder for the events.
func NewEncoder(w io.Writer, h Header) (*Encoder, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	je := json.NewEncoder(bw)
	je.SetEscapeHTML(false)
	if err := je.Encode(h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	return &Encoder{w: bw, je: je}, nil
}

// Encode writes one event. Events must come in time order.
func (e *Encoder) Encode(ev Event) error {
	switch {
	case ev.T < 0:
		return fmt.Errorf("event %d: negative time %d", e.n, ev.T)
	case e.n > 0 && ev.T < e.lastT:
		return fmt.Errorf("event %d (%s): t=%d is before the previous event (t=%d)", e.n, ev.Kind, ev.T, e.lastT)
	case !ev.Source.Known():
		return fmt.Errorf("event %d: unknown source %q", e.n, ev.Source)
	case !ev.Kind.Known():
		return fmt.Errorf("event %d: unknown kind %q", e.n, ev.Kind)
	}
	if err := e.je.Encode(ev); err != nil {
		return err
	}
	e.n++
	e.lastT = ev.T
	return nil
}

// Flush writes buffered lines to the underlying writer.
func (e *Encoder) Flush() error {
	return e.w.Flush()
}

// File records a trace to a file atomically: lines go to a temporary file
// in the destination's directory, which Commit syncs and renames into place.
// Until then nothing exists at the destination, so a crash never leaves a
// half-written trace there.
type File struct {
	*Encoder
	tmp  *os.File
	path string
}

// Create starts recording a trace with header h, to appear at path on
// Commit. Abort (or a failed Commit) removes the temporary file.
func Create(path string, h Header) (*File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	enc, err := NewEncoder(tmp, h)
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &File{Encoder: enc, tmp: tmp, path: path}, nil
}

// Commit flushes, syncs and closes the temporary file, renames it to the
// destination and syncs the directory.
func (f *File) Commit() error {
	err := f.Flush()
	if err == nil {
		err = f.tmp.Sync()
	}
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.tmp.Name())
		return err
	}
	return syncDir(filepath.Dir(f.path))
}

// Abort discards the recording.
func (f *File) Abort() error {
	f.tmp.Close()
	return os.Remove(f.tmp.Name())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// WriteFile writes t to path atomically, in canonical form.
func WriteFile(path string, t *Trace) error {
	f, err := Create(path, t.Header)
	if err != nil {
		return err
	}
	for _, ev := range t.Events {
		if err := f.Encode(ev); err != nil {
			f.Abort()
			return err
		}
	}
	return f.Commit()
}

// HarnessVersion is conform's version as the build records it: the main
// module's version, or "(devel)" in a source tree.
func HarnessVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
