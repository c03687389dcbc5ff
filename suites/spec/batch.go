package spec

import (
	"context"
	"sync"
	"time"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
)

// Job is one spec in one mode.
type Job struct {
	Spec Spec
	Mode trace.Mode
}

// Done reports one finished job: its outcome, how long it took, and how many
// jobs have finished out of how many. It may complete the outcome (the
// golden-trace verdict) before RunJobs keeps it, so that what it prints is
// the final verdict.
type Done func(o *Outcome, took time.Duration, finished, total int)

// RunJobs runs jobs against impl, at most parallel at a time (each lab job has a
// lab of its own), calling done as each one finishes. Outcomes are returned
// in the order of jobs.
func RunJobs(ctx context.Context, jobs []Job, impl runner.Impl, parallel int, done Done) []Outcome {
	return RunJobsWatched(ctx, jobs, impl, parallel, nil, done)
}

// Started reports that a job began running (for a live display of what
// runs now).
type Started func(j Job)

// RunJobsWatched is RunJobs that also calls started as each job begins.
func RunJobsWatched(ctx context.Context, jobs []Job, impl runner.Impl, parallel int, started Started, done Done) []Outcome {
	if parallel < 1 {
		parallel = 1
	}
	out := make([]Outcome, len(jobs))
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex
	finished := 0
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if started != nil {
				started(j)
			}
			start := time.Now()
			o := Run(ctx, j.Spec, j.Mode, impl)
			o.Took = time.Since(start)
			mu.Lock()
			finished++
			if done != nil {
				done(&o, o.Took, finished, len(jobs))
			}
			out[i] = o
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
