package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeScenario verifies Decode never panics and that anything it
// accepts survives YAML and JSON encoding unchanged.
func FuzzDecodeScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode("fuzz.yaml", data)
		if err != nil {
			return
		}
		out, err := Encode(s)
		if err != nil {
			t.Fatalf("Encode of an accepted scenario: %v", err)
		}
		again, err := Decode("fuzz.yaml", out)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, out)
		}
		if diff := cmp.Diff(s, again); diff != "" {
			t.Fatalf("YAML round trip (-first +second):\n%s\n%s", diff, out)
		}
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		var fromJSON Scenario
		if err := json.Unmarshal(js, &fromJSON); err != nil {
			t.Fatalf("UnmarshalJSON: %v\n%s", err, js)
		}
		if diff := cmp.Diff(s, &fromJSON); diff != "" {
			t.Fatalf("JSON round trip (-first +second):\n%s\n%s", diff, js)
		}
	})
}
