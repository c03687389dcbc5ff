package recorder

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"

	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

// FileOptions configure Record: where the trace files go, how big they may
// grow, and the policy the recorder wraps.
type FileOptions struct {
	// Dir is the directory the trace files are written into; it must exist.
	Dir string
	// Prefix starts every file's name: <Prefix>-<start>-<n>.jsonl, where
	// start is the UTC time Record was called and n counts from 1.
	// Default "conform-recorder". Files of earlier runs with the same prefix
	// count towards MaxFiles: a process that restarts in a loop cannot fill
	// the disk.
	Prefix string
	// MaxFileBytes bounds each file (header included); a file that the
	// next line would take past it is closed and a new one started.
	// Default 4 MiB; at least 16 KiB.
	MaxFileBytes int64
	// MaxFiles is how many files of Prefix are kept in Dir: starting one
	// more deletes the oldest. Default 8. The files take at most
	// MaxFiles × MaxFileBytes.
	MaxFiles int
	// Buffer is how many events wait between the channel and the writer,
	// which writes them every WriteEvery. When it is full, events are
	// dropped, never waited for: the writer counts them in a note when it
	// next writes. Default 4096: without drops, up to about 400,000
	// events a second.
	Buffer int
	// Policy is the child the recorder wraps, a registered LB policy name
	// ("pick_first", "round_robin"); Config its JSON config ("" is {}).
	// Default pick_first.
	Policy, Config string
	// Impl and ImplVersion are the headers' impl fields. Default "grpc-go"
	// and the version of google.golang.org/grpc linked into the program.
	Impl, ImplVersion string
	// Picks says which picks are written: every one (PicksAll, the
	// default), or, for a busy client, only those that did not pick a
	// READY subchannel (PicksTrouble: queued, failed, or not ready), or
	// none (PicksNone). A busy client makes a pick per RPC; the other
	// events come only when the policy's state changes. What replay
	// infers of RPCs comes from picks: with fewer, it knows less.
	Picks Picks
}

// Picks is which picks Files writes.
type Picks int

// The values of FileOptions.Picks.
const (
	PicksAll Picks = iota
	PicksTrouble
	PicksNone
)

// keeps reports whether p writes e.
func (p Picks) keeps(e *trace.Event) bool {
	switch {
	case e.Kind != trace.KindPick || p == PicksAll:
		return true
	case p == PicksTrouble:
		return e.Err != "" || e.Detail != ""
	}
	return false
}

// The defaults of FileOptions.
const (
	DefaultPrefix       = "conform-recorder"
	DefaultMaxFileBytes = 4 << 20
	DefaultMaxFiles     = 8
	DefaultBuffer       = 4096
	minFileBytes        = 16 << 10
)

// Files is the sink of a production recorder: it writes the events of one
// channel into rotating trace files (mode field), on a goroutine of its
// own. Record never blocks. Each file is a trace on its own: a header,
// then events, each line written whole; lines reach the operating system
// every WriteEvery (no fsync), so a process that crashes leaves every file
// readable up to its last whole line (trace.Read reads such a cut field
// trace). Use one Files per channel: subchannel names (sc1, sc2, …) are
// per channel.
type Files struct {
	opts   FileOptions
	start  time.Time // T = 0, on the monotonic clock
	stamp  string    // start, in the file names
	header trace.Header

	queue   chan trace.Event
	dropped atomic.Uint64
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
	unreg   func()
	sink    string // the name the sink is registered under

	// The writer goroutine's own.
	w        *fileWriter
	seq      int    // files started
	reported uint64 // drops already written as notes
	lastT    time.Duration
	lineBuf  bytes.Buffer
	lineEnc  *json.Encoder
	err      error // the writer's first error
}

var (
	_ Sink     = (*Files)(nil)
	_ Timebase = (*Files)(nil)
)

var filesSeq atomic.Uint64

// Record starts recording a grpc-go channel's load balancing into trace
// files and returns the dial option that installs the recorder, around
// opts.Policy, on the channel:
//
//	opt, rec, err := recorder.Record(recorder.FileOptions{Dir: "/var/log/app/lb", Policy: "round_robin"})
//	if err != nil { … }
//	defer rec.Close()
//	cc, err := grpc.NewClient(target, opt, …)
//
// The option is the channel's default service config
// (grpc.WithDefaultServiceConfig), naming the recorder as its LB policy. A
// service config from the resolver replaces it, and the recorder with it:
// where the name resolver may return one (DNS TXT records), add
// grpc.WithDisableServiceConfig() to keep the recorder. An xDS channel's
// policies come from the xds resolver's service config, which must not be
// disabled: Record cannot record them. Use the option for one channel.
func Record(opts FileOptions) (grpc.DialOption, *Files, error) {
	f, err := OpenFiles(opts)
	if err != nil {
		return nil, nil, err
	}
	return f.DialOption(), f, nil
}

// OpenFiles checks opts, starts the first file and the writer, and
// registers the Files as a sink (see DialOption).
func OpenFiles(opts FileOptions) (*Files, error) {
	f, err := openFiles(opts)
	if err != nil {
		return nil, err
	}
	go f.run()
	return f, nil
}

// openFiles is OpenFiles without starting the writer.
func openFiles(opts FileOptions) (*Files, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	f := &Files{
		opts:  opts,
		start: now,
		stamp: now.UTC().Format("20060102T150405.000Z"),
		queue: make(chan trace.Event, opts.Buffer),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		sink:  fmt.Sprintf("files-%d", filesSeq.Add(1)),
	}
	f.lineEnc = json.NewEncoder(&f.lineBuf)
	f.lineEnc.SetEscapeHTML(false)
	if f.header, err = f.makeHeader(); err != nil {
		return nil, err
	}
	if err := f.rotate(); err != nil {
		return nil, err
	}
	f.unreg = RegisterSink(f.sink, f)
	return f, nil
}

func (o FileOptions) withDefaults() (FileOptions, error) {
	o.Prefix = cmp.Or(o.Prefix, DefaultPrefix)
	o.MaxFileBytes = cmp.Or(o.MaxFileBytes, DefaultMaxFileBytes)
	o.MaxFiles = cmp.Or(o.MaxFiles, DefaultMaxFiles)
	o.Buffer = cmp.Or(o.Buffer, DefaultBuffer)
	o.Policy = cmp.Or(o.Policy, "pick_first")
	o.Config = cmp.Or(o.Config, "{}")
	o.Impl = cmp.Or(o.Impl, "grpc-go")
	o.ImplVersion = cmp.Or(o.ImplVersion, grpcVersion())
	switch {
	case o.Dir == "":
		return o, errors.New("recorder: FileOptions.Dir: no directory given")
	case strings.ContainsAny(o.Prefix, `/\`):
		return o, fmt.Errorf("recorder: FileOptions.Prefix %q: a file name prefix, not a path", o.Prefix)
	case o.MaxFileBytes < minFileBytes:
		return o, fmt.Errorf("recorder: FileOptions.MaxFileBytes %d: want at least %d", o.MaxFileBytes, minFileBytes)
	case o.Picks < PicksAll || o.Picks > PicksNone:
		return o, fmt.Errorf("recorder: FileOptions.Picks %d: want PicksAll, PicksTrouble or PicksNone", o.Picks)
	case o.MaxFiles < 1 || o.Buffer < 1:
		return o, fmt.Errorf("recorder: FileOptions: MaxFiles %d and Buffer %d must be positive", o.MaxFiles, o.Buffer)
	case balancer.Get(o.Policy) == nil:
		return o, fmt.Errorf("recorder: FileOptions.Policy %q: no LB policy is registered under that name", o.Policy)
	case !json.Valid([]byte(o.Config)):
		return o, fmt.Errorf("recorder: FileOptions.Config: not JSON: %s", o.Config)
	}
	if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
		return o, fmt.Errorf("recorder: FileOptions.Dir %s: not a directory", o.Dir)
	}
	return o, nil
}

// grpcVersion is the version of grpc-go linked into the program.
func grpcVersion() string { return "v" + grpc.Version }

// makeHeader is the header of every file: the client, described as a
// scenario with no timeline, and when T = 0 was on the wall clock.
func (f *Files) makeHeader() (trace.Header, error) {
	s, err := scenario.New("field-recording").
		Describe("A production client recorded by harness/recorder (mode field): the events are what its LB policy did. "+
			"There is no timeline to run here (end is a placeholder); `conform replay` infers one from the events.").
		LB(f.opts.Policy, f.opts.Config).
		End(time.Nanosecond).
		Build()
	if err != nil {
		return trace.Header{}, fmt.Errorf("recorder: FileOptions.Policy/Config: %w", err)
	}
	h := trace.NewHeader(s, f.opts.Impl, trace.ModeField, 0)
	h.ImplVersion = f.opts.ImplVersion
	// What a recorder inside the client sees: its policy's events, the
	// address lists the policy was given, the states it reported (the
	// channel's), and the LB config it runs. No packets, no RPC results.
	h.Origin = trace.OriginRecorder
	h.Shows = []trace.Evidence{trace.EvidenceResolver, trace.EvidenceChannelState, trace.EvidencePolicy, trace.EvidenceConfig}
	h.Env = map[string]string{
		EnvStart: f.start.UTC().Format(time.RFC3339Nano),
		"go":     runtime.Version(),
	}
	return h, nil
}

// The Header.Env keys of a recorder's files.
const (
	// EnvStart is the wall-clock time (RFC 3339, UTC) of T = 0.
	EnvStart = "recorder.start"
	// EnvFile is the file's number in the run, from 1.
	EnvFile = "recorder.file"
)

// DialOption is the dial option that installs the recorder around
// FileOptions.Policy, recording into f (see Record).
func (f *Files) DialOption() grpc.DialOption {
	child, _ := json.Marshal(map[string]json.RawMessage{f.opts.Policy: json.RawMessage(f.opts.Config)})
	return grpc.WithDefaultServiceConfig(fmt.Sprintf(`{"loadBalancingConfig":[{%q:{"child":[%s],"sink":%q}}]}`, Name, child, f.sink))
}

// Now is the time since OpenFiles, on the monotonic clock: the events' T.
func (f *Files) Now() time.Duration { return time.Since(f.start) }

// Record queues e for the writer, or counts it dropped when the queue is
// full. It never blocks and does not allocate.
func (f *Files) Record(e trace.Event) {
	if !f.opts.Picks.keeps(&e) {
		return
	}
	select {
	case f.queue <- e:
	default:
		f.dropped.Add(1)
	}
}

// Dropped is how many events were dropped because the queue was full.
func (f *Files) Dropped() uint64 { return f.dropped.Load() }

// Close stops recording: it unregisters the sink, writes what is queued
// (and a note of the drops not yet written), closes the last file and
// returns the writer's first error. Events recorded afterwards are dropped.
func (f *Files) Close() error {
	f.closing.Do(func() {
		f.unreg()
		close(f.stop)
	})
	<-f.done
	return f.err
}

// WriteEvery is how often the writer takes what is queued and writes it
// out. The channel's goroutines only copy events into the queue: they never
// wake the writer, which keeps a pick's cost to a copy.
const WriteEvery = 10 * time.Millisecond

// run is the writer: every WriteEvery it writes what is queued and hands
// the lines to the operating system, until Close.
func (f *Files) run() {
	defer close(f.done)
	tick := time.NewTicker(WriteEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if f.drain() {
				f.flush()
			}
		case <-f.stop:
			f.drain()
			f.noteDrops(f.Now())
			f.w.close(f)
			return
		}
	}
}

// drain writes what is queued now, without waiting, and reports whether
// there was anything.
func (f *Files) drain() bool {
	wrote := false
	for {
		select {
		case e := <-f.queue:
			f.write(e)
			wrote = true
		default:
			return wrote
		}
	}
}

// write writes one event, after a note of the drops before it.
func (f *Files) write(e trace.Event) {
	f.noteDrops(e.T)
	f.writeLine(e)
}

// noteDrops writes a note of the events dropped since the last one.
func (f *Files) noteDrops(t time.Duration) {
	n := f.dropped.Load()
	if n == f.reported {
		return
	}
	f.writeLine(trace.Event{T: t, Source: trace.SourceHarness, Kind: trace.KindNote,
		Detail: fmt.Sprintf("recorder: %d events dropped since the last such note (the queue of %d was full): the events around here are incomplete", n-f.reported, f.opts.Buffer)})
	f.reported = n
}

// writeLine encodes e and appends it to the current file, starting a new
// file first when e would take it past MaxFileBytes. An event too big for
// any file is left out, with a note saying so.
func (f *Files) writeLine(e trace.Event) {
	if f.w == nil || !e.Source.Known() || !e.Kind.Known() {
		return // no file (a failed rotation), or not a trace event
	}
	e.T = max(e.T, f.lastT) // a second channel on these Files: keep the file readable
	f.lineBuf.Reset()
	if err := f.lineEnc.Encode(e); err != nil {
		f.fail(err)
		return
	}
	n := int64(f.lineBuf.Len())
	if f.w.size+n > f.opts.MaxFileBytes && f.w.events == 0 {
		f.writeLine(trace.Event{T: e.T, Source: trace.SourceHarness, Kind: trace.KindNote,
			Detail: fmt.Sprintf("recorder: a %s event of %d bytes left out: larger than a file may be (MaxFileBytes %d)", e.Kind, n, f.opts.MaxFileBytes)})
		return
	}
	if f.w.size+n > f.opts.MaxFileBytes {
		if err := f.rotate(); err != nil {
			f.fail(err)
			return
		}
	}
	f.w.append(f, f.lineBuf.Bytes())
	f.lastT = e.T
}

func (f *Files) flush() {
	if f.w != nil {
		f.w.flush(f)
	}
}

// fail keeps the writer's first error, which Close returns.
func (f *Files) fail(err error) {
	if f.err == nil {
		f.err = fmt.Errorf("recorder: %w", err)
	}
}

// rotate closes the current file, starts the next one with its header, and
// deletes the oldest files of the prefix beyond MaxFiles.
func (f *Files) rotate() error {
	if f.w != nil {
		f.w.close(f)
		f.w = nil
	}
	f.seq++
	h := f.header
	h.Env = maps(h.Env, EnvFile, strconv.Itoa(f.seq))
	path := filepath.Join(f.opts.Dir, fmt.Sprintf("%s-%s-%04d.jsonl", f.opts.Prefix, f.stamp, f.seq))
	w, err := createFile(path, h)
	if err != nil {
		return err
	}
	f.w = w
	return f.prune()
}

// prune deletes the oldest files of the prefix until MaxFiles are left.
// Names sort by start time, then number: in the order they were written.
func (f *Files) prune() error {
	ours, err := filepath.Glob(filepath.Join(f.opts.Dir, f.opts.Prefix+"-*.jsonl"))
	if err != nil {
		return err
	}
	slices.Sort(ours)
	for len(ours) > f.opts.MaxFiles {
		if err := os.Remove(ours[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		ours = ours[1:]
	}
	return nil
}

// maps is m with key set to v, copied.
func maps(m map[string]string, key, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, x := range m {
		out[k] = x
	}
	out[key] = v
	return out
}

// fileWriter is one trace file being written.
type fileWriter struct {
	file   *os.File
	bw     *bufio.Writer
	size   int64 // bytes written, header included
	events int64 // bytes of event lines
}

// createFile creates path with header h (trace.Encoder checks it).
func createFile(path string, h trace.Header) (*fileWriter, error) {
	var hb bytes.Buffer
	enc, err := trace.NewEncoder(&hb, h)
	if err == nil {
		err = enc.Flush()
	}
	if err != nil {
		return nil, err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	w := &fileWriter{file: file, bw: bufio.NewWriterSize(file, 64<<10)}
	if _, err := w.bw.Write(hb.Bytes()); err != nil {
		file.Close()
		return nil, err
	}
	w.size = int64(hb.Len())
	return w, w.bw.Flush()
}

func (w *fileWriter) append(f *Files, line []byte) {
	if _, err := w.bw.Write(line); err != nil {
		f.fail(err)
	}
	w.size += int64(len(line))
	w.events += int64(len(line))
}

func (w *fileWriter) flush(f *Files) {
	if err := w.bw.Flush(); err != nil {
		f.fail(err)
	}
}

func (w *fileWriter) close(f *Files) {
	if w == nil {
		return
	}
	w.flush(f)
	if err := w.file.Close(); err != nil {
		f.fail(err)
	}
}
