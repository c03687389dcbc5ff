package trace

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

// benchTrace is a trace of n events in the mix a lab run produces.
func benchTrace(n int) *Trace {
	tr := sampleTrace()
	base := tr.Events
	tr.Events = make([]Event, 0, n)
	for i := 0; len(tr.Events) < n; i++ {
		for _, ev := range base {
			ev.T += time.Duration(i) * 2 * time.Second
			ev.Subchannel = fmt.Sprint(ev.Subchannel, i)
			tr.Events = append(tr.Events, ev)
		}
	}
	tr.Events = tr.Events[:n]
	return tr
}

// BenchmarkWrite measures canonical encoding throughput (bytes of output).
func BenchmarkWrite(b *testing.B) {
	tr := benchTrace(10_000)
	data, _ := Canonical(tr)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		enc, err := NewEncoder(io.Discard, tr.Header)
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range tr.Events {
			if err := enc.Encode(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := enc.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead measures strict reading throughput (bytes of input).
func BenchmarkRead(b *testing.B) {
	data, _ := Canonical(benchTrace(10_000))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read("bench.jsonl", bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
