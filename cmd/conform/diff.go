package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/replay/pcap"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

const diffUsage = `Usage:
  conform diff [flags] A B
      Compares two traces semantically, lane by lane (per address, per RPC,
      per subchannel, per policy), and prints the first divergence with the
      events around it on both sides: A is taken as the expected trace, B as
      the observed one. A and B are trace files (.jsonl, as conform writes
      them) or packet captures (.pcap, .pcapng, optionally gzipped), read
      into the connection attempts, DNS answers and clear-text RPCs they show.
      Exit status 0 when they agree, 1 when they differ, 2 for bad input.

  Examples:
      conform diff traces/a61/he-dropped-ipv6.lab.jsonl field.pcapng
      conform diff --kinds syn,rpc-result --tolerance 5ms golden.jsonl replay.jsonl
      conform diff --html diff/ traces/a61/he-dropped-ipv6.lab.jsonl mine.jsonl

Flags:
`

type diffFlags struct {
	kinds     string
	tolerance time.Duration
	ignore    string
	exact     bool
	html      string
}

func runDiff(_ context.Context, args []string, stdout, stderr io.Writer) error {
	f := diffFlags{}
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kinds, "kinds", "", "compare only these event kinds, comma-separated (syn,syn-ack,rst,channel-state,rpc-result,…); default all")
	fs.DurationVar(&f.tolerance, "tolerance", compare.LabTolerance, "how far apart in time two matched events may be")
	fs.StringVar(&f.ignore, "ignore", "peer,port", "fields left out of the comparison, by their JSON names, comma-separated")
	fs.BoolVar(&f.exact, "exact-text", false, "compare error texts and details literally (by default only their presence)")
	fs.StringVar(&f.html, "html", "", "also write an HTML page into this directory: A's and B's timelines on one time scale,\nthe first divergence marked")
	fs.Usage = func() { fmt.Fprint(stderr, diffUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitError{2}
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return badUsage("diff: want two traces, A and B; got %d arguments", fs.NArg())
	}
	if err := validHTMLDir("diff", f.html); err != nil {
		return err
	}
	a, err := readAnyTrace(fs.Arg(0))
	if err != nil {
		return usageError{err}
	}
	b, err := readAnyTrace(fs.Arg(1))
	if err != nil {
		return usageError{err}
	}
	res := compare.Traces(a, b, f.options())
	fmt.Fprintln(stdout, res.String())
	if f.html != "" {
		name := baseName(fs.Arg(0)) + " vs " + baseName(fs.Arg(1))
		page := newPage("conform diff " + name)
		page.row(diffRow, diffRowsText)
		page.run("B: "+baseName(fs.Arg(1)), name, a, b, []verdict.Result{comparison(diffRow, name, b.Header.Mode, res)})
		if err := page.write(f.html); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "conform: HTML page in %s/%s (A is the golden pane, B the observed one)\n", f.html, html.FileName)
	}
	if !res.Equal() {
		return exitError{1}
	}
	return nil
}

// options are the comparison the flags ask for.
func (f diffFlags) options() compare.Options {
	o := compare.Options{Tolerance: f.tolerance, ExactText: f.exact}
	if f.kinds != "" {
		var ks []trace.Kind
		for _, k := range strings.Split(f.kinds, ",") {
			ks = append(ks, trace.Kind(strings.TrimSpace(k)))
		}
		o.Select = []trace.Pred{trace.OfKind(ks...)}
	}
	for _, field := range strings.Split(f.ignore, ",") {
		if field = strings.TrimSpace(field); field != "" {
			o.Ignore = append(o.Ignore, field)
		}
	}
	return o
}

// readAnyTrace reads a trace file, or a packet capture as the trace of what
// it shows (its header trace.CaptureHeader: origin capture, packets and DNS
// only); errors name the file and what was expected.
func readAnyTrace(path string) (*trace.Trace, error) {
	lower := strings.ToLower(strings.TrimSuffix(path, ".gz"))
	if strings.HasSuffix(lower, ".pcap") || strings.HasSuffix(lower, ".pcapng") {
		c, err := pcap.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return &trace.Trace{Header: trace.CaptureHeader(), Events: c.Events}, nil
	}
	return trace.ReadFile(path)
}
