package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/simjudge"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

// simSuffix marks a user's balancer's column of simulator verdicts.
const simSuffix = " (sim)"

// judgeInSim runs jobs (simulator specs) against a user's balancer in the
// simulator, through the program generated for its module
// (driver.BuildSimJudge), and judges each trace as every run is judged.
// When the module cannot be judged there (another grpc-go than conform's),
// every verdict is not-applicable, with the reason.
func judgeInSim(ctx context.Context, impl driver.Release, jobs []spec.Job, stderr io.Writer) *implRun {
	r := &implRun{impl: impl, sim: true, golden: map[string]error{}}
	start := time.Now()
	defer func() { r.wall = time.Since(start) }()
	fmt.Fprintf(stderr, "conform: %s%s: preparing the simulator's program with it (a first build takes about a minute)\n", impl, simSuffix)
	cmd, err := buildSimJudge(ctx, impl, stderr)
	var ns *driver.NoSimulatorError
	switch {
	case errors.As(err, &ns):
		r.outcomes = allBroken(jobs, verdict.NotApplicable, ns.Reason)
		return r
	case err != nil:
		r.outcomes = allBroken(jobs, verdict.Error, "building the simulator's program: "+err.Error())
		return r
	}
	fmt.Fprintf(stderr, "conform: %s%s: %d scenarios, on conform's grpc-go v%s\n", impl, simSuffix, len(jobs), grpc.Version)
	r.outcomes = runSimJudge(ctx, impl, cmd, jobs)
	return r
}

func buildSimJudge(ctx context.Context, impl driver.Release, stderr io.Writer) (driver.Command, error) {
	cache, err := driver.CacheDir()
	if err != nil {
		return driver.Command{}, err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return driver.BuildSimJudge(ctx, impl, driver.InstallEnv{Cache: cache, Source: driver.FindSource(), Logger: logger})
}

// runSimJudge runs the program on jobs and judges what it wrote: one
// process per set of gRPC switches the scenarios set (grpc-go reads them
// once, from the process's environment), in the order jobs first need
// each.
func runSimJudge(ctx context.Context, impl driver.Release, cmd driver.Command, jobs []spec.Job) []spec.Outcome {
	outcomes := make([]spec.Outcome, len(jobs))
	for _, g := range byEnv(jobs) {
		part := make([]spec.Job, len(g))
		for k, i := range g {
			part[k] = jobs[i]
		}
		for k, o := range runSimJudgeProcess(ctx, impl, cmd, part, part[0].Spec.Scenario.Client.Env) {
			outcomes[g[k]] = o
		}
	}
	return outcomes
}

// byEnv groups the indexes of jobs by their scenarios' gRPC switches, in
// the order of each set's first job.
func byEnv(jobs []spec.Job) [][]int {
	var groups [][]int
	index := map[string]int{}
	for i, j := range jobs {
		key := strings.Join(scenario.EnvList(j.Spec.Scenario.Client.Env), "\x00")
		k, ok := index[key]
		if !ok {
			k = len(groups)
			index[key] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], i)
	}
	return groups
}

// runSimJudgeProcess runs the program once, with the switches env in its
// environment, on jobs (whose scenarios set exactly those).
func runSimJudgeProcess(ctx context.Context, impl driver.Release, cmd driver.Command, jobs []spec.Job, env map[string]string) []spec.Outcome {
	out, err := os.MkdirTemp("", "conform-simjudge-")
	if err != nil {
		return allBroken(jobs, verdict.Error, err.Error())
	}
	defer os.RemoveAll(out)
	req := simjudge.Request{Name: impl.String() + simSuffix, Policies: impl.Policies, Can: impl.Can, Out: out, Env: env}
	for _, j := range jobs {
		req.Specs = append(req.Specs, simjudge.ID(j.Spec))
	}
	b, _ := json.Marshal(req)
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args...)
	// The program inherits what a driver would (no gRPC switch of
	// conform's own environment), then the scenarios' switches.
	c.Env = append(append(driver.Environ(), cmd.Env...), simjudge.RequestEnv+"="+string(b))
	c.Env = append(c.Env, scenario.EnvList(env)...)
	driver.Isolate(c) // the user's code, outside the lab: no network at all
	output, runErr := c.CombinedOutput()
	outcomes := make([]spec.Outcome, len(jobs))
	for i, j := range jobs {
		start := time.Now()
		outcomes[i] = judgeSimResult(j.Spec, filepath.Join(out, fmt.Sprintf("%d.json", i)), runErr, output)
		outcomes[i].Took = time.Since(start)
	}
	return outcomes
}

// judgeSimResult judges one spec's result file; a missing one means the
// program ended before the spec (a crash: the user's balancer panicked, say).
func judgeSimResult(s spec.Spec, path string, runErr error, output []byte) spec.Outcome {
	b, err := os.ReadFile(path)
	var res simjudge.Result
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil {
		why := fmt.Sprintf("the simulator's program ended before this scenario ran (%v): %s", runErr, lastLines(string(output), 20))
		return spec.Judge(s, spec.Sim, nil, errors.New(why))
	}
	if res.NotApplicable != "" {
		return spec.Judge(s, spec.Sim, nil, &runner.NotApplicable{Reason: res.NotApplicable})
	}
	var runErrOf error
	if res.Err != "" {
		runErrOf = errors.New(res.Err)
	}
	var tr *trace.Trace
	if res.Trace != "" {
		if tr, err = trace.ReadFile(res.Trace); err != nil {
			return spec.Judge(s, spec.Sim, nil, err)
		}
	}
	return spec.Judge(s, spec.Sim, tr, runErrOf)
}

// allBroken is one verdict v, for why, on every requirement of jobs.
func allBroken(jobs []spec.Job, v verdict.Verdict, why string) []spec.Outcome {
	var out []spec.Outcome
	for _, j := range jobs {
		out = append(out, spec.Outcome{Spec: j.Spec, Mode: j.Mode,
			Results: verdict.Broken(j.Spec.Subject(j.Mode), j.Spec.Requirements(), v, why)})
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// withSimRuns adds, after each user's balancer's lab run, its run in the
// simulator on the selected simulator specs. A sharded run leaves the
// simulator out, and so does one that writes --results for conform merge
// (whose shards carry lab runs only): it says so.
func withSimRuns(ctx context.Context, runs []*implRun, f *verifyFlags, shard report.Shard, stderr io.Writer) ([]*implRun, error) {
	var out []*implRun
	for _, r := range runs {
		out = append(out, r)
		if r.impl.Name != driver.GoBalancer {
			continue
		}
		if shard.Count > 1 || f.results != "" {
			fmt.Fprintf(stderr, "conform: %s: not judged in the simulator in a sharded run or one that writes --results (run it without them for its simulator verdicts)\n", r.impl)
			continue
		}
		jobs, err := f.jobs([]trace.Mode{spec.Sim})
		if err != nil {
			continue // no selected spec runs in the simulator
		}
		out = append(out, judgeInSim(ctx, r.impl, jobs, stderr))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return out, nil
}
