package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

// A results file (`conform verify --results FILE`) is everything one verify
// run found, complete enough that `conform merge` gives the same text,
// JSON, JUnit and HTML reports as the run itself; several shards' files
// (verify --shard i/n) merge into the one matrix an unsharded run gives.
//
// It is one JSON document:
//
//	{"format": "conform-results", "version": 1,
//	 "shard": {"index": 1, "count": 3},   // 1-based
//	 "selection": "…",                    // what the command selected; shards of one run agree on it
//	 "impls": [{"impl": "grpc-go@v1.85.0", "index": 0, "items": 12, "wall_ns": …,
//	            "runs": [{"item": 0, "spec": …, "doc": …, "mode": …, "took_ns": …,
//	                      "results": [verdict.Result…], "golden_divergence": "…",
//	                      "trace": "<the trace, canonical JSON lines>"}]}]}
//
// An implementation's index is its column in the unsharded matrix, a run's
// item its place among that implementation's runs, of items; a shard holds
// only its own runs (and only the implementations it has runs of). The
// golden traces the HTML timelines show are not in it: merge reads them
// from the traces directory, as verify does.
const (
	ResultsFormat  = "conform-results"
	ResultsVersion = 1
)

// Results is one results file.
type Results struct {
	Format    string        `json:"format"`
	Version   int           `json:"version"`
	Shard     Shard         `json:"shard"`
	Selection string        `json:"selection"`
	Parallel  int           `json:"parallel"` // the -p it ran at (Matrix.Parallel)
	Impls     []ResultsImpl `json:"impls"`
}

// Shard is which part of the work a results file holds: Index of Count,
// counted from 1.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ResultsImpl is one implementation's runs in a results file.
type ResultsImpl struct {
	Impl   string       `json:"impl"`
	Index  int          `json:"index"`
	Items  int          `json:"items"`
	WallNS int64        `json:"wall_ns"`
	Runs   []ResultsRun `json:"runs"`
}

// ResultsRun is one run in a results file.
type ResultsRun struct {
	Item       int              `json:"item"`
	Spec       string           `json:"spec"`
	Doc        string           `json:"doc"`
	Mode       trace.Mode       `json:"mode"`
	TookNS     int64            `json:"took_ns"`
	Results    []verdict.Result `json:"results"`
	Divergence *string          `json:"golden_divergence,omitempty"`
	Trace      string           `json:"trace,omitempty"`
}

// ResultsOf is a shard's matrix as a results file: im.Runs[j] of
// m.Impls[i] is item items[i][j] of the implementation at column
// index[i] of the whole run, which has total[i] items.
func ResultsOf(m Matrix, shard Shard, selection string, index, total []int, items [][]int) (Results, error) {
	out := Results{Format: ResultsFormat, Version: ResultsVersion, Shard: shard, Selection: selection, Parallel: m.Parallel, Impls: []ResultsImpl{}}
	for i, im := range m.Impls {
		ri := ResultsImpl{Impl: im.Name, Index: index[i], Items: total[i], WallNS: int64(im.Wall), Runs: []ResultsRun{}}
		for j, r := range im.Runs {
			rr := ResultsRun{Item: items[i][j], Spec: r.Spec, Doc: r.Doc, Mode: r.Mode, TookNS: int64(r.Took), Results: r.Results}
			if err := im.Divergence[r.Spec]; err != nil {
				s := err.Error()
				rr.Divergence = &s
			}
			if r.Trace != nil {
				b, err := trace.Canonical(r.Trace)
				if err != nil {
					return Results{}, fmt.Errorf("%s · %s: %w", im.Name, r.Spec, err)
				}
				rr.Trace = string(b)
			}
			ri.Runs = append(ri.Runs, rr)
		}
		out.Impls = append(out.Impls, ri)
	}
	return out, nil
}

// WriteResults writes r to path, atomically.
func WriteResults(path string, r Results) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".results-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil { // other pods' merge may read it
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadResults reads a results file, refusing any other format or version.
func ReadResults(path string) (Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Results{}, err
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Results{}, fmt.Errorf("%s: not a results file (%v); want the JSON `conform verify --results` writes", path, err)
	}
	if head.Format != ResultsFormat {
		return Results{}, fmt.Errorf("%s: format %q, want %q (the file `conform verify --results` writes)", path, head.Format, ResultsFormat)
	}
	if head.Version != ResultsVersion {
		return Results{}, fmt.Errorf("%s: results version %d; this conform reads version %d only (merge with the conform that wrote it)", path, head.Version, ResultsVersion)
	}
	var r Results
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Results{}, fmt.Errorf("%s: %v", path, err)
	}
	return r, nil
}

// Merge joins the results files of all shards of one run into the matrix
// the unsharded run gives: implementations in their columns, runs in their
// order, an implementation's wall time the sum of its shards'. It refuses
// shards of different runs (selection or count), a shard given twice or
// missing, and a run missing or given twice. Each file's name is in
// names, for the errors. Golden traces are left nil.
func Merge(names []string, files []Results) (Matrix, error) {
	if len(files) == 0 {
		return Matrix{}, errors.New("no results files")
	}
	count, sel := files[0].Shard.Count, files[0].Selection
	seen := map[int]string{}
	for i, f := range files {
		switch {
		case f.Shard.Count != count:
			return Matrix{}, fmt.Errorf("%s is shard %s and %s shard %s: shards of different splits", names[i], f.Shard, names[0], files[0].Shard)
		case f.Selection != sel:
			return Matrix{}, fmt.Errorf("%s and %s are shards of different runs:\n  %s\n  %s", names[0], names[i], sel, f.Selection)
		case f.Parallel != files[0].Parallel:
			return Matrix{}, fmt.Errorf("%s ran at -p %d and %s at -p %d: their overheads cannot be told as one run's", names[0], files[0].Parallel, names[i], f.Parallel)
		case f.Shard.Index < 1 || f.Shard.Index > count:
			return Matrix{}, fmt.Errorf("%s: shard %s is not one of 1..%d", names[i], f.Shard, count)
		case seen[f.Shard.Index] != "":
			return Matrix{}, fmt.Errorf("%s and %s are both shard %s", seen[f.Shard.Index], names[i], f.Shard)
		}
		seen[f.Shard.Index] = names[i]
	}
	var missing []string
	for i := 1; i <= count; i++ {
		if seen[i] == "" {
			missing = append(missing, Shard{i, count}.String())
		}
	}
	if len(missing) > 0 {
		return Matrix{}, fmt.Errorf("shard %s missing (have %d of %d results files)", strings.Join(missing, ", "), len(files), count)
	}
	m, err := mergeImpls(names, files)
	m.Parallel = files[0].Parallel
	return m, err
}

// mergedImpl is one column as the shards give it.
type mergedImpl struct {
	impl  ResultsImpl
	runs  map[int]ResultsRun
	wall  time.Duration
	where map[int]string // item → file
}

func mergeImpls(names []string, files []Results) (Matrix, error) {
	cols := map[int]*mergedImpl{}
	for i, f := range files {
		for _, ri := range f.Impls {
			c := cols[ri.Index]
			if c == nil {
				c = &mergedImpl{impl: ri, runs: map[int]ResultsRun{}, where: map[int]string{}}
				cols[ri.Index] = c
			} else if c.impl.Impl != ri.Impl || c.impl.Items != ri.Items {
				return Matrix{}, fmt.Errorf("%s: column %d is %s of %d runs, elsewhere %s of %d", names[i], ri.Index, ri.Impl, ri.Items, c.impl.Impl, c.impl.Items)
			}
			c.wall += time.Duration(ri.WallNS)
			for _, r := range ri.Runs {
				if prev, dup := c.where[r.Item]; dup {
					return Matrix{}, fmt.Errorf("%s run %d (%s) is in both %s and %s", ri.Impl, r.Item, r.Spec, prev, names[i])
				}
				c.runs[r.Item], c.where[r.Item] = r, names[i]
			}
		}
	}
	var idx []int
	for i := range cols {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var m Matrix
	for k, i := range idx {
		c := cols[i]
		if i != k {
			return Matrix{}, fmt.Errorf("no shard has column %d (an implementation with no runs in any shard)", k)
		}
		im, err := c.matrixImpl()
		if err != nil {
			return Matrix{}, err
		}
		m.Impls = append(m.Impls, im)
	}
	return m, nil
}

func (c *mergedImpl) matrixImpl() (Impl, error) {
	im := Impl{Name: c.impl.Impl, Divergence: map[string]error{}, Wall: c.wall}
	for item := 0; item < c.impl.Items; item++ {
		r, ok := c.runs[item]
		if !ok {
			return Impl{}, fmt.Errorf("%s: run %d of %d is in no shard", c.impl.Impl, item, c.impl.Items)
		}
		run := Run{Subject: verdict.Subject{Spec: r.Spec, Doc: r.Doc, Mode: r.Mode}, Impl: c.impl.Impl,
			Took: time.Duration(r.TookNS), Results: r.Results}
		if r.Trace != "" {
			tr, err := trace.Read(c.where[item]+": "+c.impl.Impl+" · "+r.Spec, strings.NewReader(r.Trace))
			if err != nil {
				return Impl{}, err
			}
			run.Trace = tr
		}
		if r.Divergence != nil {
			im.Divergence[r.Spec] = errors.New(*r.Divergence)
		}
		im.Runs = append(im.Runs, run)
	}
	if len(c.runs) > c.impl.Items {
		return Impl{}, fmt.Errorf("%s: runs beyond its %d", c.impl.Impl, c.impl.Items)
	}
	return im, nil
}
