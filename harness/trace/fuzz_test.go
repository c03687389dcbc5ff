package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzReadTrace verifies Read never panics, and that anything it accepts
// writes canonically, reads back to the same trace, and is a fixed point of
// read-then-write.
func FuzzReadTrace(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read("fuzz.jsonl", bytes.NewReader(data))
		if err != nil {
			return
		}
		canon, err := Canonical(tr)
		if err != nil {
			t.Fatalf("Canonical of an accepted trace: %v", err)
		}
		again, err := Read("canon.jsonl", bytes.NewReader(canon))
		if err != nil {
			t.Fatalf("canonical form refused: %v\n%s", err, canon)
		}
		if diff := cmp.Diff(tr, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		canon2, _ := Canonical(again)
		if !bytes.Equal(canon, canon2) {
			t.Fatalf("canonical form not stable:\n%s\n%s", canon, canon2)
		}
	})
}
