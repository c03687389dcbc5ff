package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab"
)

const labUsage = `Usage:
  conform lab check [--json]
      Checks that this machine can run the lab: privileges (root), network
      namespaces, veth and bridge, nf_tables, IPv6, packet sockets. Changes
      nothing outside scratch namespaces it removes. Exit status 0 when the
      lab can run, 1 when it cannot (each failed check says why).

  conform lab demo [--delay-budget 10s]
      Builds a lab with two dual-stack backends, makes b1's IPv6 address drop
      SYNs, connects a real grpc-go channel (default pick_first) to
      [b1 IPv6, b1 IPv4], sends one RPC, and prints the merged timeline:
      SYNs and their fate (kernel timestamps), accepts, the HTTP/2 preface,
      the RPC served, and the channel's states. A61 says the IPv4 attempt
      starts one Connection Attempt Delay (250 ms) after the IPv6 one.
`

func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, labUsage)
		return nil
	}
	switch args[0] {
	case "check":
		return labCheck(args[1:], stdout, stderr)
	case "demo":
		return labDemo(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, labUsage)
	return badUsage("lab: unknown subcommand %q (want check or demo)", args[0])
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, labUsage) }
	return fs
}

func labCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lab check", stderr)
	asJSON := fs.Bool("json", false, "print the checks as JSON")
	if err := fs.Parse(args); err != nil {
		return exitError{2}
	}
	a := netlab.Available()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(labCheckJSON(a)); err != nil {
			return err
		}
	} else {
		for _, c := range a {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(stdout, "%s  %-20s %s\n", mark, c.Name, c.Detail)
		}
	}
	if err := a.Err(); err != nil {
		if !*asJSON {
			fmt.Fprintln(stdout, "\nThe lab cannot run here. Simulation (no root needed) still works.")
		}
		return exitError{1}
	}
	if !*asJSON {
		fmt.Fprintln(stdout, "\nThe lab can run here.")
	}
	return nil
}

// timelineRow is one line of the demo's timeline.
type timelineRow struct {
	t    time.Duration
	text string
}

func labDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lab demo", stderr)
	budget := fs.Duration("delay-budget", 10*time.Second, "give up if the RPC has not succeeded after this long")
	if err := fs.Parse(args); err != nil {
		return exitError{2}
	}
	if err := netlab.Available().Err(); err != nil {
		return fmt.Errorf("%w\n(run `conform lab check` for details)", err)
	}
	s := demoScenario(*budget)
	v6, v4 := demoAddr(s, "b1/ipv6"), demoAddr(s, "b1/ipv4")
	fmt.Fprintf(stdout, "lab: b1 %s %s, b2 on the same bridge; client0 %s %s\n",
		v4, v6, netlab.ClientAddr(0, netlab.IPv4), netlab.ClientAddr(0, netlab.IPv6))
	fmt.Fprintf(stdout, "fault: drop on %s (SYNs go unanswered)\n", v6)
	fmt.Fprintf(stdout, "client: %s, default pick_first, addresses [%s, %s]\n\n", runner.LinkedGRPCGo, v6, v4)
	tr, err := runner.Run(ctx, s, runner.LinkedGRPCGo, trace.ModeLab, runner.Options{Seed: 1})
	if tr != nil {
		for _, e := range tr.Events {
			fmt.Fprintln(stdout, e.String())
		}
	}
	if err != nil {
		return fmt.Errorf("lab demo: %w", err)
	}
	if r := firstEvent(tr, trace.KindRPCResult, ""); r == nil || r.Code != "OK" {
		return fmt.Errorf("lab demo: the RPC did not succeed within %v", *budget)
	}
	return summarizeDemo(stdout, tr, v6, v4)
}

// demoScenario is the demo as a scenario: b1's IPv6 address drops SYNs; one
// endpoint [b1 IPv6, b1 IPv4]; one wait-for-ready RPC within budget.
func demoScenario(budget time.Duration) *scenario.Scenario {
	return scenario.New("lab-demo").
		Backend("b1", scenario.Dual).
		Backend("b2", scenario.Dual).
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(0, scenario.RPC("r1", scenario.WaitForReady(), scenario.Deadline(budget))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(budget + time.Second).
		MustBuild()
}

func demoAddr(s *scenario.Scenario, a scenario.Addr) string {
	addr, err := s.Concrete(a, runner.AddrOf)
	if err != nil {
		panic(err) // the demo's own scenario names its addresses
	}
	return addr
}

// firstEvent is tr's first event of kind (to addr, if not ""), not a
// retransmission, or nil.
func firstEvent(tr *trace.Trace, kind trace.Kind, addr string) *trace.Event {
	for i, e := range tr.Events {
		if e.Kind == kind && !e.Retransmit && (addr == "" || e.Addr == addr) {
			return &tr.Events[i]
		}
	}
	return nil
}

func summarizeDemo(w io.Writer, tr *trace.Trace, first, second string) error {
	s1, s2 := firstEvent(tr, trace.KindSYN, first), firstEvent(tr, trace.KindSYN, second)
	if s1 == nil || s2 == nil {
		return fmt.Errorf("lab demo: the capture missed a SYN (to %s: %v, to %s: %v)", first, s1 != nil, second, s2 != nil)
	}
	fmt.Fprintf(w, "\n%s\n", strings.Repeat("─", 72))
	fmt.Fprintf(w, "The IPv4 SYN followed the unanswered IPv6 SYN by %.1f ms\n", float64(s2.T-s1.T)/1e6)
	fmt.Fprintf(w, "(A61, Happy Eyeballs in the pick_first LB Policy: Connection Attempt Delay, 250 ms by default).\n")
	return nil
}

// labCheckItem is one check of `lab check --json`, in the key convention of
// every JSON report (harness/report/report.schema.json, #/$defs/lab_check).
type labCheckItem struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

func labCheckJSON(a netlab.Availability) []labCheckItem {
	out := make([]labCheckItem, 0, len(a))
	for _, c := range a {
		out = append(out, labCheckItem{Name: c.Name, OK: c.OK, Detail: c.Detail})
	}
	return out
}
