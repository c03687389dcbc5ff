package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

func fnvOf(parts ...string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(strings.Join(parts, "\x00")))
	return h.Sum32()
}

// fakeRun stands for verifyImpl: a fixed outcome per implementation and
// job, every verdict among them, with the spec's golden lab trace as the
// trace, a run time and now and then a golden-trace divergence.
func fakeRun(tracesDir string) runPart {
	verdicts := verdict.Verdicts
	return func(_ context.Context, p part) *implRun {
		r := &implRun{impl: p.impl, golden: map[string]error{}}
		for _, j := range p.jobs {
			o := spec.Outcome{Spec: j.Spec, Mode: j.Mode, Took: time.Duration(fnvOf(p.impl.String(), j.Spec.Name())%5000) * time.Millisecond}
			if tr, err := trace.ReadFile(spec.GoldenPath(tracesDir, j.Spec, j.Mode)); err == nil {
				o.Trace = tr
			}
			for _, id := range j.Spec.Requirements() {
				v := verdicts[fnvOf(p.impl.String(), j.Spec.Name(), id)%uint32(len(verdicts))]
				res := verdict.Result{Spec: j.Spec.Name(), Doc: string(j.Spec.Doc), Requirement: id, Mode: j.Mode, Verdict: v}
				if v != verdict.Pass {
					res.Evidence = fmt.Sprintf("%s at %s: evidence\nline two", v, p.impl)
				}
				if v == verdict.Fail {
					res.Kind = verdict.Absent
				}
				o.Results = append(o.Results, res)
			}
			if fnvOf(p.impl.String(), j.Spec.Name())%3 == 0 {
				r.golden[j.Spec.Name()] = fmt.Errorf("first divergence at event %d", fnvOf(j.Spec.Name())%40)
			} else {
				r.golden[j.Spec.Name()] = nil
			}
			r.wall += o.Took
			r.outcomes = append(r.outcomes, o)
		}
		return r
	}
}

// reports are the text, JSON, JUnit and HTML of m, as verify and merge write them.
func reports(t *testing.T, m report.Matrix) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	var text, js, htm bytes.Buffer
	f := reportFlags{junit: filepath.Join(dir, "junit.xml"), failOn: report.FailOnNever}
	if err := writeMatrixReports(m, f, &text, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := m.JSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := html.Render(&htm, m.HTML(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	junit, err := os.ReadFile(f.junit)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"text": text.Bytes(), "json": js.Bytes(), "junit": junit, "html": htm.Bytes()}
}

func a61Work(t *testing.T) ([]driver.Release, []spec.Job, []spec.Outcome, string) {
	t.Helper()
	f := &runFlags{suite: "a61,a62"}
	jobs, err := f.jobs([]trace.Mode{spec.Lab})
	if err != nil {
		t.Fatal(err)
	}
	simOnly, err := f.simOnly()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	impls := []driver.Release{{Name: "grpc-go", Version: "v1.85.0"}, {Name: "grpc-go", Version: "v1.84.0"}, {Name: "grpc-js", Version: "1.14.7"}}
	return impls, jobs, simOnly, dir
}

// TestShardMerge_EqualsOneRun verifies that the reports of a run split
// into 3 shards (and into 4, where every implementation's runs straddle
// two shards), each written to a results file and merged, are byte for
// byte those of the same run unsharded: text (with the since view), JSON,
// JUnit and HTML. The runs are fakes (fakeRun), fixed per implementation
// and spec; the splitting, the results files and the merge are verify's.
func TestShardMerge_EqualsOneRun(t *testing.T) {
	ctx := context.Background()
	impls, jobs, simOnly, dir := a61Work(t)
	whole := report.Shard{Index: 1, Count: 1}
	runs, err := runPlan(ctx, plan(impls, jobs, simOnly, whole), fakeRun(dir))
	if err != nil {
		t.Fatal(err)
	}
	want := reports(t, matrixOf(runs, dir))

	for _, n := range []int{3, 4} {
		got := reports(t, shardAndMerge(t, impls, jobs, simOnly, dir, n))
		if !bytes.Contains(want["text"], []byte("since: grpc-go, 2 releases")) {
			t.Errorf("the run has no since view:\n%s", want["text"])
		}
		for _, k := range []string{"text", "json", "junit", "html"} {
			if !bytes.Equal(got[k], want[k]) {
				t.Errorf("n=%d: merged %s differs from the unsharded run's (%d vs %d bytes); first difference at byte %d", n, k, len(got[k]), len(want[k]), firstDiff(got[k], want[k]))
			}
		}
	}
}

// shardAndMerge runs the work as n shards, each writing its results file,
// and merges the files, given in reverse order.
func shardAndMerge(t *testing.T, impls []driver.Release, jobs []spec.Job, simOnly []spec.Outcome, dir string, n int) report.Matrix {
	t.Helper()
	ctx := context.Background()
	tmp := t.TempDir()
	var files []string
	for i := 1; i <= n; i++ {
		sh := report.Shard{Index: i, Count: n}
		parts := plan(impls, jobs, simOnly, sh)
		runs, err := runPlan(ctx, parts, fakeRun(dir))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(tmp, fmt.Sprintf("shard-%d.json", i))
		if err := writeResults(path, matrixOf(runs, ""), parts, sh, "selection"); err != nil {
			t.Fatal(err)
		}
		files = append([]string{path}, files...) // any order
	}
	m, err := mergeFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	addGoldens(m, dir)
	return m
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPlan_EveryRunInExactlyOneShard verifies the split for shard counts
// from 1 to more shards than runs.
func TestPlan_EveryRunInExactlyOneShard(t *testing.T) {
	impls, jobs, simOnly, _ := a61Work(t)
	total := len(impls) * (len(jobs) + len(simOnly))
	for n := 1; n <= total+2; n += 1 + n/4 {
		seen := map[string]int{}
		sizes := []int{}
		for i := 1; i <= n; i++ {
			size := 0
			for _, p := range plan(impls, jobs, simOnly, report.Shard{Index: i, Count: n}) {
				if len(p.jobs)+len(p.simOnly) != len(p.items) || p.jobItems != len(p.jobs) {
					t.Fatalf("n=%d shard %d: %s has %d items for %d jobs and %d sim-only", n, i, p.impl, len(p.items), len(p.jobs), len(p.simOnly))
				}
				for _, item := range p.items {
					seen[fmt.Sprintf("%s#%d", p.impl, item)]++
					size++
				}
			}
			sizes = append(sizes, size)
		}
		if len(seen) != total {
			t.Errorf("n=%d: %d runs in some shard, want %d", n, len(seen), total)
		}
		for k, c := range seen {
			if c != 1 {
				t.Errorf("n=%d: %s in %d shards", n, k, c)
			}
		}
		lo, hi := total, 0
		for _, s := range sizes {
			lo, hi = min(lo, s), max(hi, s)
		}
		if hi-lo > 1 {
			t.Errorf("n=%d: shard sizes %v differ by more than one", n, sizes)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, ok := range []string{"1/1", "2/3", "3/3"} {
		if _, err := parseShard(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"3/2", "0/2", "1/0", "2", "a/b", "-1/3", "1/3/4"} {
		if _, err := parseShard(bad); err == nil || !strings.Contains(err.Error(), "counted from 1") {
			t.Errorf("%s: got %v, want a usage error", bad, err)
		}
	}
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"verify", "--impl", "grpc-go@v1.85.0", "--shard", "3/2"}, &out, &errw)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), `--shard "3/2"`) {
		t.Errorf("verify --shard 3/2: %v, want a usage error naming it", err)
	}
}

// TestMerge_Refuses verifies merge's errors: a missing shard, a shard
// twice, shards of different runs, a results file of another version.
func TestMerge_Refuses(t *testing.T) {
	ctx := context.Background()
	impls, jobs, simOnly, dir := a61Work(t)
	tmp := t.TempDir()
	write := func(name string, sh report.Shard, sel string) string {
		parts := plan(impls, jobs, simOnly, sh)
		runs, err := runPlan(ctx, parts, fakeRun(dir))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(tmp, name)
		if err := writeResults(path, matrixOf(runs, ""), parts, sh, sel); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.json", report.Shard{Index: 1, Count: 2}, "run one")
	b := write("b.json", report.Shard{Index: 2, Count: 2}, "run one")
	other := write("other.json", report.Shard{Index: 2, Count: 2}, "run two")
	if _, err := mergeFiles([]string{a, b}); err != nil {
		t.Fatalf("a whole run: %v", err)
	}
	newer := filepath.Join(tmp, "newer.json")
	raw, _ := os.ReadFile(a)
	os.WriteFile(newer, bytes.Replace(raw, []byte(`"version": 1`), []byte(`"version": 2`), 1), 0o644)
	for name, tc := range map[string]struct {
		files []string
		want  string
	}{
		"missing":   {[]string{a}, "shard 2/2 missing"},
		"twice":     {[]string{a, b, a}, "are both shard 1/2"},
		"other run": {[]string{a, other}, "shards of different runs"},
		"version":   {[]string{newer, b}, "results version 2; this conform reads version 1 only"},
	} {
		if _, err := mergeFiles(tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

// TestNeedsXDS verifies which parts get their xDS driver built before the
// first scenario: those with an xDS scenario.
func TestNeedsXDS(t *testing.T) {
	_, jobs, _, _ := a61Work(t)
	var xds, plain []spec.Job
	for _, j := range jobs {
		if strings.HasPrefix(j.Spec.Name(), "xds-") {
			xds = append(xds, j)
		} else if strings.HasPrefix(j.Spec.Name(), "he-") {
			plain = append(plain, j)
		}
	}
	if len(xds) == 0 || len(plain) == 0 {
		t.Fatalf("a61 and a62 have %d xds-* and %d he-* lab specs", len(xds), len(plain))
	}
	if !needsXDS(xds[:1]) || needsXDS(plain) {
		t.Errorf("needsXDS(%s) = %v, needsXDS(he-*) = %v", xds[0].Spec.Name(), needsXDS(xds[:1]), needsXDS(plain))
	}
}
