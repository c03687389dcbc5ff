package badtrace

import (
	"bytes"
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/internal/mutate"
	"github.com/conformlab/conform/suites/spec"
)

const regenerate = "go run ./suites/internal/badtrace/cmd/badtraces"

func tracesDir(t *testing.T) string {
	t.Helper()
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func readTrace(t *testing.T, path string) *trace.Trace {
	t.Helper()
	tr, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestChecks_PassOnTheirGoodTraceAndFailOnTheirBadOne runs every check of
// the suites on its pair: it passes on its spec's golden traces (simulated
// and lab), and fails, a fail of its own, on its bad trace. A check without
// a bad trace, black-box or reference-only, fails the test unless
// MISSING.md lists it with the reason.
func TestChecks_PassOnTheirGoodTraceAndFailOnTheirBadOne(t *testing.T) {
	dir := tracesDir(t)
	missing, err := ReadMissing(dir)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	var checks, blackBox, withBad, blackBoxWithBad, listed int
	for _, c := range Checks(Specs()) {
		known[c.Key()] = true
		for _, m := range []trace.Mode{spec.Sim, spec.Lab} {
			if !c.Spec.RunsIn(m) || (m == spec.Sim && c.Mode() == spec.Lab) {
				continue
			}
			good := readTrace(t, spec.GoldenPath(dir, c.Spec, m))
			if r := c.Judge(good, m); r.Verdict != verdict.Pass {
				t.Errorf("%s [%s]: %s on its golden trace %s, which should be known-good:\n%s",
					c.Key(), m, r.Label(), spec.GoldenPath(dir, c.Spec, m), r.Evidence)
			}
		}
		checks++
		if c.BlackBox() {
			blackBox++
		}
		why, isListed := missing[c.Key()]
		path := filepath.Join(dir, c.File(c.Mode()))
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			switch {
			case isListed:
				listed++
				t.Logf("%s has no bad trace (MISSING.md: %s)", c.Key(), why)
			case Wanted(c):
				t.Errorf("%s: a check without a bad trace, not shown to fail: run %s, or list it in %s with the reason", c.Key(), regenerate, MissingFile)
			}
			continue
		}
		if isListed {
			t.Errorf("%s has a bad trace now: remove it from %s", c.Key(), MissingFile)
		}
		withBad++
		if c.BlackBox() {
			blackBoxWithBad++
		}
		bad := readTrace(t, path)
		if r := c.Judge(bad, c.Mode()); !Fails(r) {
			t.Errorf("%s: %s on its bad trace %s, which should fail it:\n%s", c.Key(), r.Label(), path, r.Evidence)
		}
	}
	for key := range missing {
		if !known[key] {
			t.Errorf("%s names %q, which is no check of the suites", MissingFile, key)
		}
	}
	t.Logf("%d checks (%d black-box), %d with a bad trace (%d black-box), %d listed in %s", checks, blackBox, withBad, blackBoxWithBad, listed, MissingFile)
}

// badTraces lists the trace files under traces/bad/.
func badTraces(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, "bad"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBadTraces_AreTheirGoldenTraceMutated reads each bad trace's header for
// its check and its mutation, applies the mutation to the check's golden
// trace again, and expects the file's bytes: a bad trace is nothing but its
// golden trace and one named mutation, and the generator is deterministic.
// After golden traces change, the generator must be run again.
func TestBadTraces_AreTheirGoldenTraceMutated(t *testing.T) {
	dir := tracesDir(t)
	byKey := map[string]Check{}
	for _, c := range Checks(Specs()) {
		byKey[c.Key()] = c
	}
	for _, path := range badTraces(t, dir) {
		rel, _ := filepath.Rel(dir, path)
		bad := readTrace(t, path)
		key, id, ok := MutationOf(bad)
		if !ok {
			t.Errorf("%s: its header does not say which check and mutation it is for", rel)
			continue
		}
		c, ok := byKey[key]
		if !ok {
			t.Errorf("%s: for %q, which is no check of the suites (run %s)", rel, key, regenerate)
			continue
		}
		if want := c.File(c.Mode()); rel != want {
			t.Errorf("%s: the bad trace of %s belongs at %s", rel, key, want)
		}
		golden := readTrace(t, spec.GoldenPath(dir, c.Spec, c.Mode()))
		m, ok := mutate.ByID(golden, id)
		if !ok {
			t.Errorf("%s: mutation %s is no longer a candidate of its golden trace (run %s)", rel, id, regenerate)
			continue
		}
		again, err := Make(golden, c, m)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		want, err := trace.Canonical(again)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not its golden trace with %s applied (run %s)", rel, id, regenerate)
		}
	}
}

// TestIndex_ListsTheBadTraces: traces/bad/README.md is the index the
// generator writes for the bad traces there.
func TestIndex_ListsTheBadTraces(t *testing.T) {
	dir := tracesDir(t)
	var found []Found
	for _, c := range Checks(Specs()) {
		path := filepath.Join(dir, c.File(c.Mode()))
		if _, err := os.Stat(path); err != nil {
			continue
		}
		bad := readTrace(t, path)
		_, id, _ := MutationOf(bad)
		golden := readTrace(t, spec.GoldenPath(dir, c.Spec, c.Mode()))
		m, ok := mutate.ByID(golden, id)
		if !ok {
			continue // TestBadTraces_AreTheirGoldenTraceMutated says why
		}
		f := Found{Check: c, Mutation: m, Trace: bad, Result: c.Judge(bad, c.Mode())}
		for _, o := range Checks([]spec.Spec{c.Spec}) {
			if o.Index != c.Index && o.Judge(golden, c.Mode()).Verdict == verdict.Pass && o.Judge(bad, c.Mode()).Verdict != verdict.Pass {
				f.Collateral = append(f.Collateral, o.Key())
			}
		}
		found = append(found, f)
	}
	got, err := os.ReadFile(filepath.Join(dir, "bad", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := Index(found); string(got) != want {
		t.Errorf("traces/bad/README.md is not the index of the bad traces there (run %s)", regenerate)
	}
}

// TestHints_NameChecksAndAreFollowed: every hint names a check, and that
// check's bad trace uses a mutation its hints name.
func TestHints_NameChecksAndAreFollowed(t *testing.T) {
	dir := tracesDir(t)
	byKey := map[string]Check{}
	for _, c := range Checks(Specs()) {
		byKey[c.Key()] = c
	}
	for _, key := range Hints() {
		c, ok := byKey[key]
		if !ok {
			t.Errorf("a hint for %q, which is no check of the suites", key)
			continue
		}
		path := filepath.Join(dir, c.File(c.Mode()))
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if _, id, _ := MutationOf(readTrace(t, path)); !Hinted(c, id) {
			t.Errorf("%s: its bad trace uses %s, none of its hints %v", key, id, hints[key])
		}
	}
}

// TestCheckNames_AreEvaluatesNames: the checks are named as verdict.Evaluate
// names their rows.
func TestCheckNames_AreEvaluatesNames(t *testing.T) {
	dir := tracesDir(t)
	for _, s := range Specs() {
		if !s.RunsIn(spec.Sim) {
			continue
		}
		// Judged as in the lab, where every check gives a row (the
		// simulator has no backends to judge some by).
		rs := verdict.Evaluate(s.Subject(spec.Lab), s.Checks, readTrace(t, spec.GoldenPath(dir, s, spec.Sim)))
		var got []string
		for _, c := range Checks([]spec.Spec{s}) {
			got = append(got, c.Name)
		}
		want := make([]string, len(rs))
		for i, r := range rs {
			want[i] = r.Check
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: names %q, Evaluate's %q", s.Name(), got, want)
		}
	}
}

// withStalls is tr with a stall of length d every step, from 0 to its last
// event, in time order, as the lab's stall watch records them.
func withStalls(tr *trace.Trace, d, step time.Duration) *trace.Trace {
	out := &trace.Trace{Header: tr.Header}
	end := time.Duration(0)
	if n := len(tr.Events); n > 0 {
		end = tr.Events[n-1].T
	}
	var stalls []trace.Event
	for at := step / 2; at < end; at += step {
		stalls = append(stalls, trace.Event{T: at, Source: trace.SourceHarness, Kind: trace.KindStall, Duration: d})
	}
	out.Events = append(slices.Clone(tr.Events), stalls...)
	slices.SortStableFunc(out.Events, func(a, b trace.Event) int { return cmp.Compare(a.T, b.T) })
	return out
}

// TestChecks_StallsChangeOnlyTimerVerdicts verifies that the lab's stall
// events are evidence for timer checks only: on every golden trace with
// stalls shorter than spec.StallLimit added throughout, every check still
// passes; with longer ones, a check passes or is inconclusive because the
// machine stalled (spec.RequireSteadyMachine), and only in the lab — as
// he-dropped-ipv6's check of the Connection Attempt Delay is.
func TestChecks_StallsChangeOnlyTimerVerdicts(t *testing.T) {
	dir := tracesDir(t)
	var unsteady []string
	for _, c := range Checks(Specs()) {
		for _, m := range []trace.Mode{spec.Sim, spec.Lab} {
			if !c.Spec.RunsIn(m) || (m == spec.Sim && c.Mode() == spec.Lab) {
				continue
			}
			good := readTrace(t, spec.GoldenPath(dir, c.Spec, m))
			if r := c.Judge(withStalls(good, spec.StallLimit-time.Microsecond, 50*time.Millisecond), m); r.Verdict != verdict.Pass {
				t.Errorf("%s [%s]: %s on its golden trace with stalls under the limit:\n%s", c.Key(), m, r.Label(), r.Evidence)
			}
			r := c.Judge(withStalls(good, 4*spec.StallLimit, 500*time.Millisecond), m)
			switch {
			case r.Verdict == verdict.Pass:
			case m == spec.Lab && spec.Unsteady(r):
				unsteady = append(unsteady, c.Key())
			default:
				t.Errorf("%s [%s]: %s on its golden trace with stalls of %v:\n%s", c.Key(), m, r.Label(), 4*spec.StallLimit, r.Evidence)
			}
		}
	}
	if !slices.Contains(unsteady, "a61/he-dropped-ipv6 A61-HE-DELAY-DEFAULT") {
		t.Errorf("the Connection Attempt Delay's check judged a lab trace full of stalls; inconclusive: %v", unsteady)
	}
	t.Logf("inconclusive with stalls of %v: %v", 4*spec.StallLimit, unsteady)
}
