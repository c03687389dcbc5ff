package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/monitor"
)

const checkUsage = `Usage:
  conform check [flags] TRACE…
      Runs every requirement monitor on each trace: the invariants any trace
      must keep, whatever scenario made it (sticky TRANSIENT_FAILURE and the
      backoff of its reconnections; TF only after every address failed once;
      one Connection Attempt Delay between first-pass attempts; the next
      address at once after a failure; family interleaving; re-resolution at
      the end of a failed pass and after each round of failures; RPCs in TF;
      no lower priority before the failover timer unless TF).
      docs/monitors.md lists them.

      A TRACE is a trace file (.jsonl: the suites' traces, conform try's and
      replay's, a field recorder's) or a packet capture (.pcap, .pcapng,
      optionally gzipped), which shows only packets and DNS answers. The
      trace's header says where it came from and what it can show; each
      monitor gives a verdict per trace:
        pass            the trace keeps the invariant
        fail            it breaks it: the events that break it, with their times
        inconclusive    the evidence it needs is missing (a capture has no
                        channel states and no LB config), or a precondition of
                        the judgement did not hold (the machine stalled)
        not-applicable  the rule does not apply (another policy), or the trace
                        does not exercise it
      Exit status 0 when nothing failed, 1 when a monitor failed, 2 for bad
      input (the file and line, or packet, and what was expected).

  Examples:
      conform check traces/a62/*.jsonl
      conform check --json conform-traces/my-failover.grpc-js-1.14.7.lab.jsonl
      conform check client.pcapng

Flags:
`

// checked is one trace's verdicts, as --json prints them.
type checked struct {
	File    string           `json:"file"`
	Impl    string           `json:"impl"`
	Mode    trace.Mode       `json:"mode"`
	Origin  trace.Origin     `json:"origin,omitempty"`
	Shows   []trace.Evidence `json:"shows"`
	Results []verdict.Result `json:"results"`
}

func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	asJSON := false
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&asJSON, "json", false, "print the verdicts as JSON: per trace its file, origin, evidence and results")
	fs.Usage = func() { fmt.Fprint(stderr, checkUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitError{2}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return badUsage("check: name at least one trace or capture")
	}
	var all []checked
	var bad []error
	for _, path := range fs.Args() {
		tr, err := readAnyTrace(path)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		origin, shows := tr.Header.Provenance()
		all = append(all, checked{File: path, Impl: tr.Header.Impl, Mode: tr.Header.Mode, Origin: origin, Shows: shows, Results: monitor.JudgeAll(path, tr)})
	}
	if len(bad) > 0 {
		return usageError{errors.Join(bad...)}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return err
		}
	} else {
		for _, c := range all {
			printChecked(stdout, c)
		}
		if len(all) > 1 {
			printTotals(stdout, all)
		}
	}
	for _, c := range all {
		for _, r := range c.Results {
			if r.Verdict == verdict.Fail || r.Verdict == verdict.Error {
				return exitError{1}
			}
		}
	}
	return nil
}

// printChecked prints one trace's verdicts as a table, a failure's
// evidence and the reason of any other verdict short of a pass below its
// row.
func printChecked(w io.Writer, c checked) {
	from := "origin not recorded"
	if c.Origin != "" {
		from = "from a " + string(c.Origin)
	}
	var shows, cannot []string
	for _, e := range trace.Evidences {
		if slices.Contains(c.Shows, e) {
			shows = append(shows, string(e))
		} else {
			cannot = append(cannot, string(e))
		}
	}
	fmt.Fprintf(w, "%s\n  %s, %s, %s; shows %s", c.File, c.Impl, c.Mode, from, strings.Join(shows, ", "))
	if len(cannot) > 0 {
		fmt.Fprintf(w, "; cannot show %s", strings.Join(cannot, ", "))
	}
	fmt.Fprintln(w)
	counts := map[verdict.Verdict]int{}
	for _, r := range c.Results {
		counts[r.Verdict]++
		fmt.Fprintf(w, "  %-34s %-26s %s\n", r.Requirement, r.Check, r.Label())
		if r.Verdict != verdict.Pass && r.Evidence != "" {
			fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(strings.TrimRight(r.Evidence, "\n"), "\n", "\n      "))
		}
	}
	fmt.Fprintf(w, "  %s\n\n", tally(counts))
}

// printTotals sums the verdicts of several traces, per monitor.
func printTotals(w io.Writer, all []checked) {
	fmt.Fprintf(w, "%d traces:\n", len(all))
	for i, r := range all[0].Results {
		counts := map[verdict.Verdict]int{}
		for _, c := range all {
			counts[c.Results[i].Verdict]++
		}
		fmt.Fprintf(w, "  %-34s %-26s %s\n", r.Requirement, r.Check, tally(counts))
	}
}

// tally renders counts of verdicts in the reports' order: "2 pass, 1 fail".
func tally(counts map[verdict.Verdict]int) string {
	var sum []string
	for _, v := range verdict.Verdicts {
		if counts[v] > 0 {
			sum = append(sum, fmt.Sprintf("%d %s", counts[v], v))
		}
	}
	return strings.Join(sum, ", ")
}
