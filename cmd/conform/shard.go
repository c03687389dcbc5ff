package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/suites/spec"
)

// parseShard parses --shard "i/n": shard i of n, counted from 1
// ("" is the whole run, 1/1).
func parseShard(s string) (report.Shard, error) {
	if s == "" {
		return report.Shard{Index: 1, Count: 1}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return report.Shard{}, fmt.Errorf("--shard %q: want i/n with 1 ≤ i ≤ n (shards are counted from 1: 1/3, 2/3, 3/3)", s)
	}
	return report.Shard{Index: i, Count: n}, nil
}

// part is one implementation's share of a shard: the lab jobs it runs and
// the simulator-only specs it reports, with their items (their places among
// the implementation's runs in the unsharded run: the lab jobs in order,
// then the simulator-only specs).
type part struct {
	impl     driver.Release
	index    int // the implementation's column in the unsharded matrix
	total    int // its runs in the unsharded run
	jobs     []spec.Job
	simOnly  []spec.Outcome
	items    []int // of jobs, then of simOnly
	jobItems int   // how many of items are jobs'
}

// plan splits the work, implementation × spec, into shard.Count contiguous
// blocks of near-equal size in a fixed order (implementations as given,
// each one's lab jobs, then its simulator-only specs) and returns shard's
// block, by implementation. Every (implementation, spec) is in exactly one
// shard, whatever the machine; contiguous blocks keep each shard to the
// drivers of few releases (a build or install is the slow part of a new
// release).
func plan(impls []driver.Release, jobs []spec.Job, simOnly []spec.Outcome, shard report.Shard) []part {
	per := len(jobs) + len(simOnly)
	all := len(impls) * per
	lo, hi := (shard.Index-1)*all/shard.Count, shard.Index*all/shard.Count
	var out []part
	for i, impl := range impls {
		p := part{impl: impl, index: i, total: per}
		for item := 0; item < per; item++ {
			if k := i*per + item; k < lo || k >= hi {
				continue
			}
			if item < len(jobs) {
				p.jobs = append(p.jobs, jobs[item])
				p.jobItems++
			} else {
				p.simOnly = append(p.simOnly, simOnly[item-len(jobs)])
			}
			p.items = append(p.items, item)
		}
		if len(p.items) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// runPart is how verify runs one part: verifyImpl, in the lab.
type runPart func(ctx context.Context, p part) *implRun

// runPlan runs each part, in order, adding its simulator-only outcomes
// after its lab ones; it stops at the first part the context ends.
func runPlan(ctx context.Context, parts []part, run runPart) ([]*implRun, error) {
	var runs []*implRun
	for _, p := range parts {
		r := run(ctx, p)
		r.outcomes = append(r.outcomes, p.simOnly...)
		runs = append(runs, r)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return runs, nil
}

// selection names what a verify command selected, so that merge can tell
// shards of one run from shards of another.
func selection(impls []driver.Release, f *verifyFlags) string {
	var names []string
	for _, im := range impls {
		names = append(names, im.String())
	}
	return fmt.Sprintf("impls=%s suite=%q label-filter=%q", strings.Join(names, ","), f.suite, f.labelFilter)
}

// writeResults writes the shard's results file (--results).
func writeResults(path string, m report.Matrix, parts []part, shard report.Shard, sel string) error {
	var index, total []int
	var items [][]int
	for _, p := range parts {
		index, total, items = append(index, p.index), append(total, p.total), append(items, p.items)
	}
	r, err := report.ResultsOf(m, shard, sel, index, total, items)
	if err != nil {
		return err
	}
	return report.WriteResults(path, r)
}

// printPlan says what a shard runs, when the run is sharded.
func printPlan(w io.Writer, parts []part, shard report.Shard) {
	if shard.Count == 1 {
		return
	}
	n := 0
	var names []string
	for _, p := range parts {
		n += len(p.items)
		names = append(names, fmt.Sprintf("%s (%d)", p.impl, len(p.items)))
	}
	fmt.Fprintf(w, "conform: shard %s: %d of the runs: %s\n", shard, n, strings.Join(names, ", "))
}
