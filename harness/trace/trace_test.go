package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRoundTrip_TraceFileTrace verifies WriteFile then ReadFile gives back
// the same trace, and the file holds exactly the canonical bytes.
func TestRoundTrip_TraceFileTrace(t *testing.T) {
	want := sampleTrace()
	path := filepath.Join(t.TempDir(), "he.jsonl")
	if err := WriteFile(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	data, _ := os.ReadFile(path)
	canon, err := Canonical(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, canon) {
		t.Fatalf("file is not canonical:\nfile:\n%s\ncanonical:\n%s", data, canon)
	}
}

// TestCanonical_GoldenFileIsByteIdentical verifies reading the committed
// golden example and writing it again changes no byte.
func TestCanonical_GoldenFileIsByteIdentical(t *testing.T) {
	const path = "testdata/he-dropped-ipv6-ok.jsonl"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := Canonical(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, canon) {
		t.Fatalf("canonical form differs from the file:\n%s", cmp.Diff(string(data), string(canon)))
	}
	if diff := cmp.Diff(sampleTrace(), tr); diff != "" {
		t.Fatalf("golden file does not hold sampleTrace (-want +got):\n%s", diff)
	}
}

// TestCanonical_NormalizesKeyOrderAndSpacing verifies a valid line written
// by another tool (other key order, spaces) is read and rewritten canonically.
func TestCanonical_NormalizesKeyOrderAndSpacing(t *testing.T) {
	canon, _ := Canonical(sampleTrace())
	header := strings.SplitN(string(canon), "\n", 2)[0]
	in := header + "\n" + `{ "kind": "syn", "addr": "198.18.0.1:50051", "src": "capture", "t": 7 }` + "\n"
	tr, err := Read("other.jsonl", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := Canonical(tr)
	want := header + "\n" + `{"t":7,"src":"capture","kind":"syn","addr":"198.18.0.1:50051"}` + "\n"
	if string(out) != want {
		t.Fatalf("Canonical =\n%s\nwant\n%s", out, want)
	}
}

// TestRead_BadFilesNameFileAndLine verifies each malformed example is refused
// with an *Error at the right line, for the right reason.
func TestRead_BadFilesNameFileAndLine(t *testing.T) {
	cases := map[string]struct {
		line   int
		reason string
	}{
		"blank-bad-empty-line.jsonl":             {4, "empty line"},
		"case-bad-field-spelling.jsonl":          {3, `unknown field "Kind"`},
		"cut-bad-no-final-newline.jsonl":         {6, "no newline"},
		"field-bad-unknown-field.jsonl":          {4, `unknown field "colour"`},
		"json-bad-malformed.jsonl":               {6, "malformed JSON"},
		"json-bad-trailing-data.jsonl":           {2, "after top-level value"},
		"kind-bad-unknown-kind.jsonl":            {7, `unknown kind "syn-flood"`},
		"mode-bad-unknown-mode.jsonl":            {1, `unknown mode "dream"`},
		"no-header-bad-missing-header.jsonl":     {1, "missing header"},
		"not-trace-bad-no-schema.jsonl":          {1, `not a trace: line 1 is a JSON object without "schema"`},
		"order-bad-time-backwards.jsonl":         {11, "out of time order"},
		"scenario-bad-undefined-backend.jsonl":   {1, `steps[0].fault.addr: backend "b3" is not defined`},
		"schema2-bad-unknown-schema.jsonl":       {1, "unknown schema version 2"},
		"source-bad-unknown-source.jsonl":        {7, `unknown source "sniffer"`},
		"time-bad-float.jsonl":                   {3, "malformed JSON"},
		"time-bad-missing-t.jsonl":               {4, `missing "t"`},
		"two-headers-bad-duplicate-header.jsonl": {5, "duplicate header"},
	}
	files, _ := filepath.Glob("testdata/*-bad-*.jsonl")
	if len(files) != len(cases) {
		t.Errorf("%d bad files in testdata, %d cases in the table", len(files), len(cases))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := cases[filepath.Base(f)]
			if !ok {
				t.Fatal("no case for this file")
			}
			_, err := ReadFile(f)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ReadFile error = %v, want *Error", err)
			}
			if e.File != f || e.Line != want.line || !strings.Contains(e.Reason, want.reason) {
				t.Fatalf("got %q, want %s:%d: …%s…", err, f, want.line, want.reason)
			}
		})
	}
}

// TestRead_EmptyFileHasNoHeader verifies an empty file is refused at line 1.
func TestRead_EmptyFileHasNoHeader(t *testing.T) {
	_, err := Read("empty.jsonl", strings.NewReader(""))
	var e *Error
	if !errors.As(err, &e) || e.Line != 1 || !strings.Contains(e.Reason, "missing header") {
		t.Fatalf("Read(empty) error = %v", err)
	}
}

// TestRead_FieldTraceCutShortReadUpToLastWholeLine verifies a field trace
// whose writer died in the middle of a line is read up to its last whole
// line, and that a lab trace cut the same way is still refused.
func TestRead_FieldTraceCutShortReadUpToLastWholeLine(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		ok   bool
	}{{ModeField, true}, {ModeLab, false}} {
		tr := sampleTrace()
		tr.Header.Mode = c.mode
		data, err := Canonical(tr)
		if err != nil {
			t.Fatal(err)
		}
		last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
		cut := data[:last+len(data[last:])/2] // half of the last line
		got, err := Read("cut.jsonl", bytes.NewReader(cut))
		switch {
		case c.ok && err != nil:
			t.Errorf("%s trace cut short: %v, want it read up to its last whole line", c.mode, err)
		case c.ok && len(got.Events) != len(tr.Events)-1:
			t.Errorf("%s trace cut short: %d events, want %d", c.mode, len(got.Events), len(tr.Events)-1)
		case !c.ok && err == nil:
			t.Errorf("%s trace cut short: read, want it refused", c.mode)
		}
	}
}

// TestRead_LongLine verifies lines longer than the read buffer are read.
func TestRead_LongLine(t *testing.T) {
	tr := sampleTrace()
	tr.Events = []Event{{T: 1, Source: SourceDriver, Kind: KindLog, Detail: strings.Repeat("x", 200_000)}}
	data, _ := Canonical(tr)
	got, err := Read("long.jsonl", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 1 || len(got.Events[0].Detail) != 200_000 {
		t.Fatalf("long line not read back whole")
	}
}

// TestEncoder_RefusesWhatReadRefuses verifies the writer cannot produce a
// trace the reader would reject.
func TestEncoder_RefusesWhatReadRefuses(t *testing.T) {
	h := sampleTrace().Header
	for name, evs := range map[string][]Event{
		"out of order":   {{T: 2, Source: SourceDriver, Kind: KindLog}, {T: 1, Source: SourceDriver, Kind: KindLog}},
		"unknown kind":   {{T: 1, Source: SourceDriver, Kind: "nap"}},
		"unknown source": {{T: 1, Source: "oracle", Kind: KindLog}},
		"negative time":  {{T: -1, Source: SourceDriver, Kind: KindLog}},
	} {
		t.Run(name, func(t *testing.T) {
			enc, err := NewEncoder(&bytes.Buffer{}, h)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				err = enc.Encode(ev)
			}
			if err == nil {
				t.Fatal("Encode accepted it")
			}
		})
	}
	bad := h
	bad.Schema = 7
	if _, err := NewEncoder(&bytes.Buffer{}, bad); err == nil {
		t.Error("NewEncoder accepted schema 7")
	}
}

// TestCreate_NothingAtPathUntilCommit verifies live recording is atomic: the
// destination appears only on Commit, and Abort leaves no file behind.
func TestCreate_NothingAtPathUntilCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.jsonl")
	f, err := Create(path, sampleTrace().Header)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Encode(Event{T: 1, Source: SourceDriver, Kind: KindLog}); err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("destination exists before Commit (stat: %v)", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if tr, err := ReadFile(path); err != nil || len(tr.Events) != 1 {
		t.Fatalf("after Commit: %v, %d events", err, len(tr.Events))
	}

	g, err := Create(filepath.Join(dir, "aborted.jsonl"), sampleTrace().Header)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Abort(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "live.jsonl" {
		t.Fatalf("directory holds %v, want only live.jsonl", entries)
	}
}

// TestWriteFile_FailedWriteLeavesOldFile verifies a write that fails midway
// keeps the previous file intact and removes its temporary file.
func TestWriteFile_FailedWriteLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "golden.jsonl")
	if err := WriteFile(path, sampleTrace()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := sampleTrace()
	bad.Events = append(bad.Events, Event{T: 0, Source: SourceDriver, Kind: KindLog}) // out of order
	if err := WriteFile(path, bad); err == nil {
		t.Fatal("WriteFile accepted an out-of-order trace")
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("failed write changed the existing file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}
}

// TestEventString_CompactRendering verifies the one-line human form.
func TestEventString_CompactRendering(t *testing.T) {
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{T: 250*time.Millisecond + 912*time.Microsecond, Source: SourceCapture, Kind: KindSYN, Addr: "[fd00::1]:50051", Retransmit: true},
			"+250.9ms capture syn [fd00::1]:50051 retransmit"},
		{Event{T: 20*time.Second + 1500*time.Microsecond, Source: SourceDriver, Kind: KindChannelState, State: "TRANSIENT_FAILURE"},
			"+20.002s driver channel-state TRANSIENT_FAILURE"},
		{Event{T: 999_960 * time.Microsecond, Source: SourcePolicy, Kind: KindTimerStart, Timer: "connection attempt delay", TimerID: 3, Duration: 250 * time.Millisecond},
			`+1.000s policy timer-start timer="connection attempt delay" timer_id=3 duration=250ms`},
		{Event{T: 0, Source: SourceHarness, Kind: KindResolverUpdate, Endpoints: [][]string{{"a:1", "b:2"}, {"c:3"}}},
			"+0.0ms harness resolver-update endpoints=[[a:1 b:2] [c:3]]"},
		{Event{T: 5 * time.Millisecond, Source: SourceDriver, Kind: KindRPCResult, RPC: "r1", Code: "UNAVAILABLE", Err: "no addresses"},
			`+5.0ms driver rpc-result rpc=r1 code=UNAVAILABLE err="no addresses"`},
	}
	for _, c := range cases {
		if got := c.ev.String(); got != c.want {
			t.Errorf("String() = %q\n          want %q", got, c.want)
		}
	}
}

// TestLane_Rules verifies each lane rule and its precedence.
func TestLane_Rules(t *testing.T) {
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{Kind: KindPick, RPC: "r1", Subchannel: "sc1"}, "rpc:r1"},
		{Event{Kind: KindSubchannelState, Subchannel: "sc1", Policy: "pick_first"}, "subchannel:sc1"},
		{Event{Kind: KindBalancerState, Policy: "priority/p0"}, "policy:priority/p0"},
		{Event{Kind: KindTimerFire}, "policy:"},
		{Event{Kind: KindSYN, Addr: "198.18.0.1:50051"}, "addr:198.18.0.1:50051"},
		{Event{Kind: KindAccept, Addr: "198.18.0.1:50051", Backend: "b1"}, "addr:198.18.0.1:50051"},
		{Event{Kind: KindBackendDown, Backend: "b1"}, "backend:b1"},
		{Event{Kind: KindChannelState, State: "READY"}, "channel"},
		{Event{Kind: KindResolverUpdate}, "resolver"},
		{Event{Kind: KindConfigUpdate, Source: SourceHarness, Detail: `{"priorities":[]}`}, "resolver"},
		{Event{Kind: KindNote, Detail: "x"}, ""},
		{Event{Kind: KindStall, Source: SourceHarness, Duration: 20 * time.Millisecond}, ""},
		{Event{Kind: KindXDSRequest, Source: SourceControlPlane, TypeURL: "type.googleapis.com/envoy.config.cluster.v3.Cluster", XDS: XDSNACK}, "xds:CDS"},
		{Event{Kind: KindXDSRequest, TypeURL: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"}, "xds:EDS"},
		{Event{Kind: KindXDSRequest, TypeURL: "type.googleapis.com/x.Other"}, "xds:type.googleapis.com/x.Other"},
	}
	for _, c := range cases {
		if got := Lane(c.ev); got != c.want {
			t.Errorf("Lane(%v) = %q, want %q", c.ev, got, c.want)
		}
	}
}

// TestSelectAndWindow verifies filtering by kind, source and lane, and
// time-window slicing on the sample trace.
func TestSelectAndWindow(t *testing.T) {
	evs := sampleTrace().Events
	syns := Select(evs, OfKind(KindSYN), FromSource(SourceCapture))
	if len(syns) != 3 {
		t.Fatalf("%d SYNs, want 3", len(syns))
	}
	v6 := Select(evs, InLane("addr:[fd00:c0f::1]:50051"))
	if len(v6) != 3 || v6[0].Kind != KindFaultSet || !v6[2].Retransmit {
		t.Fatalf("IPv6 lane = %v", v6)
	}
	w := Window(evs, 250*time.Millisecond, 252*time.Millisecond)
	if len(w) != 4 || w[0].Kind != KindTimerFire || w[3].Kind != KindAccept {
		t.Fatalf("Window[250ms,252ms) = %v", w)
	}
	if got := Window(evs, time.Hour, 2*time.Hour); len(got) != 0 {
		t.Fatalf("window past the end = %v", got)
	}
	if got := ByLane(evs)["rpc:r1"]; len(got) != 4 {
		t.Fatalf("rpc:r1 lane = %v", got)
	}
}
