package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/suites/spec"
)

const mergeUsage = `Usage:
  conform merge [flags] RESULTS.json…
      Joins the results files of a sharded verify (verify --shard i/n
      --results FILE, one file per shard) into one matrix, and reports it
      as verify does: the matrix (or --json), --junit, --html, and the
      exit status by --fail-on. The merged reports are those one unsharded
      run would give (an implementation's wall time is the sum of its
      shards'). Every shard 1..n of one run must be given, each once.

  The results file (format "conform-results", version 1) is described in
  docs/scale.md; a file of another version is refused.

Flags:
`

// reportFlags are how verify and merge report a matrix.
type reportFlags struct {
	junit, html, failOn string
	asJSON              bool
}

func (f *verifyFlags) reportFlags() reportFlags {
	return reportFlags{junit: f.junit, html: f.html, failOn: f.failOn, asJSON: f.asJSON}
}

// writeMatrixReports writes m's reports as the flags say and returns
// exit status 1 when a verdict counts against the run (--fail-on).
func writeMatrixReports(m report.Matrix, f reportFlags, stdout, stderr io.Writer) error {
	if f.junit != "" {
		var all []report.Run
		for _, im := range m.Impls {
			all = append(all, im.Runs...)
		}
		if err := report.WriteJUnit(f.junit, all); err != nil {
			return err
		}
	}
	if f.html != "" {
		if err := html.Write(f.html, m.HTML(time.Now())); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "conform: HTML report in %s/%s\n", f.html, html.FileName)
	}
	if f.asJSON {
		if err := m.JSON(stdout); err != nil {
			return err
		}
	} else {
		m.Text(stdout)
	}
	if !m.OK(f.failOn) {
		return exitError{1}
	}
	return nil
}

func runMerge(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var f reportFlags
	var traces string
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
	fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report (matrix and timelines) into this directory")
	fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON instead of the matrix")
	fs.StringVar(&f.failOn, "fail-on", report.FailOnFail, "which verdicts make the exit status 1: fail (fail or error), error, never (as verify)")
	fs.StringVar(&traces, "traces", "", "the golden traces directory, for --html's timelines; default: traces/ of the enclosing checkout")
	fs.Usage = func() { fmt.Fprint(stderr, mergeUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitError{2}
	}
	switch f.failOn {
	case report.FailOnFail, report.FailOnError, report.FailOnNever:
	default:
		return badUsage("merge: --fail-on %q: want fail, error or never", f.failOn)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return badUsage("merge: name the results files (verify --results FILE), one per shard")
	}
	rf := runFlags{junit: f.junit, html: f.html, traces: traces, parallel: 1}
	if err := rf.validate("merge"); err != nil {
		return err
	}
	m, err := mergeFiles(fs.Args())
	if err != nil {
		return err
	}
	if f.html != "" {
		if dir, err := rf.tracesDir(); err == nil {
			addGoldens(m, dir)
		}
	}
	return writeMatrixReports(m, f, stdout, stderr)
}

// mergeFiles reads the results files and merges them (report.Merge).
func mergeFiles(paths []string) (report.Matrix, error) {
	var files []report.Results
	for _, p := range paths {
		r, err := report.ReadResults(p)
		if err != nil {
			return report.Matrix{}, err
		}
		files = append(files, r)
	}
	m, err := report.Merge(paths, files)
	if err != nil {
		return report.Matrix{}, fmt.Errorf("merge: %w", err)
	}
	return m, nil
}

// addGoldens gives each run its spec's golden trace, if it has one, for
// the HTML timelines (as verify's matrixOf does).
func addGoldens(m report.Matrix, dir string) {
	specs := map[string]spec.Spec{}
	for _, su := range suites() {
		for _, sp := range su.specs() {
			specs[sp.Name()] = sp
		}
	}
	for _, im := range m.Impls {
		for i, r := range im.Runs {
			sp, ok := specs[r.Spec]
			if !ok {
				continue
			}
			if g, err := trace.ReadFile(spec.GoldenPath(dir, sp, r.Mode)); err == nil {
				im.Runs[i].Golden = g
			}
		}
	}
}
