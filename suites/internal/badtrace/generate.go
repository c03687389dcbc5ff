package badtrace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/internal/mutate"
	"github.com/conformlab/conform/suites/spec"
)

// Mode is the mode of the golden trace c's bad trace is made from: the
// simulator's, exact and deterministic, which most specs have; the lab's for
// a check that reads the backends' evidence, which only the lab records, and
// for a spec the simulator cannot run (a channel's idle timeout).
func (c Check) Mode() trace.Mode {
	if slices.Contains(c.Of().Needs, trace.SourceBackend) || !c.Spec.RunsIn(spec.Sim) {
		return spec.Lab
	}
	return spec.Sim
}

// Wanted reports whether c is to have a bad trace: every check of a spec
// that runs in its Mode, black-box or reference-only.
func Wanted(c Check) bool {
	return c.Spec.RunsIn(c.Mode())
}

// Result is what Generate did.
type Result struct {
	Found   []Found
	Missing []Check // wanted checks none of whose mutations fails
}

// Generate searches a bad trace for every wanted check of specs, writes
// each under tracesDir/bad/ (replacing what was there, so that re-running
// it writes the same bytes) and the index, bad/README.md.
func Generate(tracesDir string, specs []spec.Spec) (Result, error) {
	var res Result
	for _, c := range Checks(specs) {
		if !Wanted(c) {
			continue
		}
		golden, err := Golden(tracesDir, c.Spec, c.Mode())
		if err != nil {
			return res, err
		}
		f, ok := Search(golden, c, c.Mode())
		if !ok {
			res.Missing = append(res.Missing, c)
			continue
		}
		res.Found = append(res.Found, f)
	}
	dir := filepath.Join(tracesDir, "bad")
	if err := removeTraces(dir); err != nil {
		return res, err
	}
	for _, f := range res.Found {
		path := filepath.Join(tracesDir, f.Check.File(f.Check.Mode()))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return res, err
		}
		if err := trace.WriteFile(path, f.Trace); err != nil {
			return res, err
		}
	}
	return res, os.WriteFile(filepath.Join(dir, "README.md"), []byte(Index(res.Found)), 0o644)
}

// removeTraces removes the trace files under dir, the previous generation.
func removeTraces(dir string) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			return os.Remove(path)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Index renders traces/bad/README.md: where the bad traces come from, the
// mutation families, and one row per check.
func Index(found []Found) string {
	var b strings.Builder
	b.WriteString(indexHead)
	b.WriteString("\n## The mutations\n\n")
	b.WriteString("`suites/internal/mutate`, in the order the generator tries them (most specific first):\n\n")
	b.WriteString("| family | what it changes |\n|---|---|\n")
	for _, f := range mutate.Families() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f.Name, cell(f.Description))
	}
	used := map[string]int{}
	for _, f := range found {
		used[f.Mutation.Family]++
	}
	var doc string
	for _, f := range found {
		c := f.Check
		if c.Doc() != doc {
			doc = c.Doc()
			fmt.Fprintf(&b, "\n## %s\n\n", strings.ToUpper(doc))
			b.WriteString("| check | good trace | bad trace | mutation | the rule it breaks | the check's fail | also fails |\n|---|---|---|---|---|---|---|\n")
		}
		rule := ""
		if r, ok := requirement.ByID(c.Requirement()); ok {
			rule = r.Text
		}
		kind := "black-box"
		if !c.BlackBox() {
			kind = "reference-only"
		}
		fmt.Fprintf(&b, "| %s · %s%s (%s) | [%s](%s) | [%s](%s) | `%s`: %s | %s | %s | %s |\n",
			c.Spec.Name(), c.Requirement(), nameSuffix(c), kind,
			filepath.Base(spec.GoldenPath("", c.Spec, c.Mode())), filepath.ToSlash(filepath.Join("..", c.Doc(), filepath.Base(spec.GoldenPath("", c.Spec, c.Mode())))),
			filepath.Base(c.File(c.Mode())), filepath.ToSlash(strings.TrimPrefix(c.File(c.Mode()), "bad/")),
			f.Mutation.ID, cell(f.Mutation.Description), cell(rule), cell(firstLine(f.Result.Label()+": "+f.Result.Evidence)),
			cell(strings.Join(shortKeys(f.Collateral, c), ", ")))
	}
	fmt.Fprintf(&b, "\n%d bad traces; mutations used:", len(found))
	var fams []string
	for _, fam := range mutate.Families() {
		if used[fam.Name] > 0 {
			fams = append(fams, fmt.Sprintf(" `%s` %d", fam.Name, used[fam.Name]))
		}
	}
	b.WriteString(strings.Join(fams, ",") + ".\n")
	return b.String()
}

const indexHead = `# Known-bad traces

Each check below has a known-good trace, its spec's golden trace
(` + "`traces/<doc>/<spec>.sim.jsonl`" + `; ` + "`.lab.jsonl`" + ` for a check that reads the backends'
evidence, which only the lab records), on which it passes, and a known-bad one here, on
which it fails: the golden trace changed by one named mutation that breaks the
check's rule (DESIGN.md, "How a verdict is reached": a check that cannot fail
is a defect). ` + "`go test ./suites/internal/badtrace`" + ` runs every check on its pair (and on
the lab's golden trace, which it passes too). Black-box checks (no ` + "`Needs`" + `: they judge
any implementation's trace) and reference-only ones (` + "`Needs: spec.NeedsPolicy`" + `, the
policy's own events) alike.

- **Where they come from**: generated, never edited by hand —
  ` + "`go run ./suites/internal/badtrace/cmd/badtraces`" + ` tries the mutations of
  ` + "`suites/internal/mutate`" + ` on each check's golden trace, most specific first, and keeps
  the first on which the check fails (a fail of its own, not a panic) and which
  leaves the spec's other checks passing, or else the one that breaks the
  fewest of them ("also fails" below). It writes the same bytes when run again;
  the test re-applies each recorded mutation to its golden trace and compares.
  After re-recording golden traces, run it again and review the diff.
- **Names**: ` + "`bad/<doc>/<spec>.<requirement>[.<n>].<mode>.jsonl`" + `, ` + "`<n>`" + ` telling apart a
  requirement's several checks in one spec (the report's ` + "`#n`" + `).
- **Each file says what it is**: its header's scenario description ends with
  "— bad trace for <check>: mutation <ID>: <what it changed>". Only what the
  implementation did changes: the harness's stimuli and the scenario stay as
  they were, and the trace is one the strict reader and the JSON schema take.
- **Checks still without one** are listed, with the reason, in
  [MISSING.md](MISSING.md); the test fails on any other check without one.
`

// firstLine is s's first line that says something (Gomega's "Expected" on
// a line of its own is followed by the value: the lines are joined), cut to
// 160 characters.
func firstLine(s string) string {
	lines := strings.Split(s, "\n")
	out := strings.TrimSpace(lines[0])
	for i := 1; i < len(lines) && (strings.HasSuffix(out, ":") || strings.HasSuffix(out, "Expected")) && len(out) < 160; i++ {
		out += " " + strings.TrimSpace(lines[i])
	}
	r := []rune(strings.Join(strings.Fields(out), " "))
	if len(r) > 160 {
		return string(r[:159]) + "…"
	}
	return string(r)
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func nameSuffix(c Check) string {
	if c.Name == "" {
		return ""
	}
	return " " + c.Name
}

// shortKeys are the keys of the collateral checks without c's spec.
func shortKeys(keys []string, c Check) []string {
	out := slices.Clone(keys)
	for i, k := range out {
		out[i] = strings.TrimPrefix(k, c.Doc()+"/"+c.Spec.Name()+" ")
	}
	return out
}
