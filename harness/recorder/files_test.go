package recorder

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
)

// recordPicks records n pick events naming RPCs 0 … n-1, one microsecond
// apart.
func recordPicks(f *Files, from, n int) {
	for i := from; i < from+n; i++ {
		f.Record(trace.Event{T: time.Duration(i) * time.Microsecond, Source: trace.SourcePolicy, Kind: trace.KindPick,
			RPC: strconv.Itoa(i), Subchannel: "sc1", Addr: "198.18.0.1:443"})
	}
}

// readDir reads every file of the prefix in dir, in name order.
func readDir(t *testing.T, dir string) (names []string, traces []*trace.Trace) {
	t.Helper()
	names, _ = filepath.Glob(filepath.Join(dir, DefaultPrefix+"-*.jsonl"))
	for _, n := range names {
		tr, err := trace.ReadFile(n)
		if err != nil {
			t.Fatalf("a recorder's file is not a trace: %v", err)
		}
		traces = append(traces, tr)
	}
	return names, traces
}

// TestFiles_RotateKeepsMaxFilesEachATrace verifies the files rotate at
// MaxFileBytes, only the newest MaxFiles of the prefix are kept (an earlier
// run's included), and each is a field trace on its own whose events
// continue the previous file's.
func TestFiles_RotateKeepsMaxFilesEachATrace(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, DefaultPrefix+"-20000101T000000.000Z-0001.jsonl")
	if err := os.WriteFile(old, []byte("an earlier run's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFiles(FileOptions{Dir: dir, MaxFileBytes: minFileBytes, MaxFiles: 3, Buffer: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	recordPicks(f, 0, 2000)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f.Dropped() != 0 {
		t.Fatalf("%d events dropped with a queue larger than what was recorded", f.Dropped())
	}
	names, traces := readDir(t, dir)
	if len(names) != 3 {
		t.Fatalf("%d files kept, want MaxFiles = 3: %v", len(names), names)
	}
	next := -1
	for i, tr := range traces {
		st, _ := os.Stat(names[i])
		if st.Size() > minFileBytes {
			t.Errorf("%s: %d bytes, over MaxFileBytes %d", names[i], st.Size(), minFileBytes)
		}
		if tr.Header.Mode != trace.ModeField || tr.Header.Env[EnvFile] == "" || tr.Header.Env[EnvStart] == "" {
			t.Errorf("%s: header %+v, want mode field with the file's number and start", names[i], tr.Header)
		}
		for _, e := range tr.Events {
			n, _ := strconv.Atoi(e.RPC)
			if next >= 0 && n != next {
				t.Fatalf("%s: event of RPC %d follows RPC %d: files lost or reordered events", names[i], n, next-1)
			}
			next = n + 1
		}
	}
	if next != 2000 {
		t.Errorf("the newest file ends with RPC %d, want 1999", next-1)
	}
}

// TestFiles_CutByACrashReadUpToLastWholeLine verifies a file whose writer
// died in the middle of a line is read up to its last whole line.
func TestFiles_CutByACrashReadUpToLastWholeLine(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFiles(FileOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	recordPicks(f, 0, 10)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := readDir(t, dir)
	data, _ := os.ReadFile(names[0])
	if err := os.WriteFile(names[0], data[:len(data)-20], 0o644); err != nil { // the last line, cut
		t.Fatal(err)
	}
	tr, err := trace.ReadFile(names[0])
	if err != nil {
		t.Fatalf("a file cut by a crash: %v", err)
	}
	if len(tr.Events) != 9 || tr.Events[8].RPC != "8" {
		t.Fatalf("read %d events of a file cut in its 10th, want the 9 whole ones", len(tr.Events))
	}
}

// TestFiles_FullQueueDropsAndNotesIt verifies Record drops what a full
// queue cannot take, counts it, and the writer writes the count as a note.
func TestFiles_FullQueueDropsAndNotesIt(t *testing.T) {
	dir := t.TempDir()
	f, err := openFiles(FileOptions{Dir: dir, Buffer: 2}) // no writer yet: the queue fills
	if err != nil {
		t.Fatal(err)
	}
	recordPicks(f, 0, 5)
	if got := f.Dropped(); got != 3 {
		t.Fatalf("Dropped() = %d after 5 events into a queue of 2, want 3", got)
	}
	go f.run()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, traces := readDir(t, dir)
	var picks, notes []trace.Event
	for _, e := range traces[0].Events {
		switch e.Kind {
		case trace.KindPick:
			picks = append(picks, e)
		case trace.KindNote:
			notes = append(notes, e)
		}
	}
	if len(picks) != 2 || len(notes) != 1 || !strings.Contains(notes[0].Detail, "3 events dropped") {
		t.Fatalf("file holds %d picks and notes %v, want the 2 queued picks and a note of 3 dropped", len(picks), notes)
	}
}

// TestFiles_TooBigEventLeftOutWithANote verifies an event larger than a
// file may be is left out, with a note, and the file stays in bounds.
func TestFiles_TooBigEventLeftOutWithANote(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFiles(FileOptions{Dir: dir, MaxFileBytes: minFileBytes})
	if err != nil {
		t.Fatal(err)
	}
	f.Record(trace.Event{T: 1, Source: trace.SourceHarness, Kind: trace.KindResolverUpdate,
		Endpoints: [][]string{{strings.Repeat("x", minFileBytes)}}})
	recordPicks(f, 1, 1)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, traces := readDir(t, dir)
	evs := traces[0].Events
	if len(evs) != 2 || evs[0].Kind != trace.KindNote || !strings.Contains(evs[0].Detail, "resolver-update event") || evs[1].Kind != trace.KindPick {
		t.Fatalf("events %v, want a note of the resolver update left out, then the pick", evs)
	}
}

// TestRecord_RefusesBadOptions verifies Record says what is wrong.
func TestRecord_RefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		o    FileOptions
		want string
	}{
		{FileOptions{}, "Dir"},
		{FileOptions{Dir: filepath.Join(dir, "missing")}, "not a directory"},
		{FileOptions{Dir: dir, MaxFileBytes: 100}, "MaxFileBytes"},
		{FileOptions{Dir: dir, Policy: "no_such_policy"}, "no LB policy"},
		{FileOptions{Dir: dir, Config: "{"}, "not JSON"},
		{FileOptions{Dir: dir, Prefix: "a/b"}, "Prefix"},
	} {
		if _, _, err := Record(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Record(%+v) = %v, want an error about %s", c.o, err, c.want)
		}
	}
}

// TestFiles_PicksTroubleKeepsOnlyPicksThatDidNotGetAReadySubchannel
// verifies PicksTrouble writes queued, failed and not-ready picks, and
// every other event, and PicksNone no pick at all.
func TestFiles_PicksTroubleKeepsOnlyPicksThatDidNotGetAReadySubchannel(t *testing.T) {
	evs := []trace.Event{
		{T: 1, Source: trace.SourcePolicy, Kind: trace.KindPick, Subchannel: "sc1", Addr: "198.18.0.1:443"},
		{T: 2, Source: trace.SourcePolicy, Kind: trace.KindPick, Detail: "queued", Err: "no SubConn is available"},
		{T: 3, Source: trace.SourcePolicy, Kind: trace.KindPick, Subchannel: "sc1", State: "CONNECTING", Detail: "not ready"},
		{T: 4, Source: trace.SourcePolicy, Kind: trace.KindSubchannelState, Subchannel: "sc1", State: "READY"},
	}
	for _, c := range []struct {
		picks Picks
		want  []time.Duration
	}{{PicksAll, []time.Duration{1, 2, 3, 4}}, {PicksTrouble, []time.Duration{2, 3, 4}}, {PicksNone, []time.Duration{4}}} {
		dir := t.TempDir()
		f, err := OpenFiles(FileOptions{Dir: dir, Picks: c.picks})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			f.Record(e)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		_, traces := readDir(t, dir)
		var got []time.Duration
		for _, e := range traces[0].Events {
			got = append(got, e.T)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Picks %d wrote the events at %v, want %v", c.picks, got, c.want)
		}
	}
}
