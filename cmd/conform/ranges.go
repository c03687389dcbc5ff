package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/suites/spec"
)

// scaleFlags are verify's flags for version ranges and shards.
type scaleFlags struct {
	everyPatch bool
	shard      string
	results    string
}

func (s *scaleFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.everyPatch, "every-patch", false, "expand a version range (--impl grpc-go@v1.55.0..v1.85.0) to every release in it,\nnot only the latest patch of each minor")
	fs.StringVar(&s.shard, "shard", "", "run only shard i of n of the work, implementation × spec (i/n, counted from 1:\n1/3, 2/3, 3/3); join the shards' --results files with `conform merge`")
	fs.StringVar(&s.results, "results", "", "also write every run (verdicts, evidence, traces) to this JSON file, for `conform merge`")
}

// validate checks the flags before any work starts.
func (s *scaleFlags) validateScale(name string) error {
	if _, err := parseShard(s.shard); err != nil {
		return badUsage("%s: %v", name, err)
	}
	if s.results != "" {
		if err := writable(s.results); err != nil {
			return badUsage("%s: --results: %v", name, err)
		}
	}
	return nil
}

// expandImpls parses the --impl arguments, expanding each version range
// into its releases (driver.ExpandRange, with the versions list gives)
// and saying on w what each range holds. ranged are the releases that
// came from a range.
func expandImpls(ctx context.Context, args []string, everyPatch bool, list driver.Lister, w io.Writer) (impls []driver.Release, ranged map[driver.Release]bool, err error) {
	ranged = map[driver.Release]bool{}
	for _, s := range args {
		if !driver.IsRange(s) {
			impl, err := driver.ParseRelease(s)
			if err != nil {
				return nil, nil, usageError{err}
			}
			impls = append(impls, impl)
			continue
		}
		rs, err := driver.ExpandRange(ctx, s, everyPatch, list)
		if err != nil {
			return nil, nil, rangeError(err)
		}
		var vs []string
		for _, r := range rs {
			vs = append(vs, r.Version)
			ranged[r] = true
		}
		which := "the latest patch of each minor"
		if everyPatch {
			which = "every release"
		}
		fmt.Fprintf(w, "conform: %s: %s (%s): %s\n", s, plural(len(rs), "release"), which, strings.Join(vs, " "))
		impls = append(impls, rs...)
	}
	return impls, ranged, nil
}

// prepareDrivers builds or installs the driver of each part's release
// that came from a range — and its xDS build too when the part has an xDS
// scenario — into the cache (a release already there costs nothing),
// before any scenario runs: a release whose driver does not build or
// install is an error naming it; one whose xDS build does not is a warning
// (its xDS scenarios give the reason as their error).
func prepareDrivers(ctx context.Context, parts []part, ranged map[driver.Release]bool, w io.Writer) error {
	var todo []part
	for _, p := range parts {
		if ranged[p.impl] {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	cache, err := driver.CacheDir()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for i, p := range todo {
		fmt.Fprintf(w, "conform: driver %d of %d: %s\n", i+1, len(todo), p.impl)
		env := driver.InstallEnv{Cache: cache, Source: driver.FindSource(), Logger: logger}
		variants := []bool{false}
		if needsXDS(p.jobs) {
			variants = append(variants, true)
		}
		for _, xds := range variants {
			env.XDS = xds
			_, err := driver.Install(ctx, p.impl, env)
			switch {
			case err != nil && ctx.Err() != nil:
				return ctx.Err()
			case err != nil && !xds:
				return fmt.Errorf("%s: the driver could not be built or installed, so no scenario ran: %w", p.impl, err)
			case err != nil:
				// The release is there; its xDS add-on may not be (npm has
				// @grpc/grpc-js-xds for some minors only): its xDS
				// scenarios will say so, the others run.
				fmt.Fprintf(w, "conform: warning: %s: no xDS build (its xDS scenarios will be errors, with this reason): %s\n", p.impl, strings.TrimSpace(strings.SplitN(err.Error(), "\n", 2)[0]))
			}
		}
	}
	return nil
}

// needsXDS reports whether a job's scenario reaches its backends through xDS.
func needsXDS(jobs []spec.Job) bool {
	for _, j := range jobs {
		if j.Spec.Scenario.Client.Target == scenario.TargetXDS {
			return true
		}
	}
	return false
}

// rangeError is err as a usage error when the range itself is wrong.
func rangeError(err error) error {
	if errors.As(err, new(*driver.BadRange)) {
		return usageError{err}
	}
	return err
}

// plural is "1 release", "3 releases".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
