package badtrace

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MissingFile is the allow-list of checks without a bad trace, under the
// traces directory: one line per check, "- `<key>` — <why>".
const MissingFile = "bad/MISSING.md"

// ReadMissing reads the allow-list: each check's key and the reason it has
// no bad trace yet.
func ReadMissing(tracesDir string) (map[string]string, error) {
	path := filepath.Join(tracesDir, MissingFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "- `")
		if !ok {
			continue
		}
		key, why, ok := strings.Cut(rest, "`")
		why = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(why), "—-:"))
		if !ok || why == "" {
			return nil, fmt.Errorf("%s:%d: want \"- `<check>` — <why it has no bad trace>\"", path, n)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n, key)
		}
		out[key] = why
	}
	return out, sc.Err()
}
