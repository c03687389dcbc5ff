package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/netlab"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
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
	return fmt.Errorf("lab: unknown subcommand %q", args[0])
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
		if err := enc.Encode(a); err != nil {
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
	l, err := netlab.Start(ctx, netlab.Config{
		Backends: []netlab.BackendConfig{{Name: "b1"}, {Name: "b2"}},
		Capture:  true,
	})
	if err != nil {
		return err
	}
	defer l.Close()
	v4, _ := l.Addr("b1", false)
	v6, _ := l.Addr("b1", true)
	if err := l.SetFault(v6, netlab.FaultDrop); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "lab: b1 %s %s, b2 on the same bridge; client0 %s %s\n",
		v4, v6, netlab.ClientAddr(0, false), netlab.ClientAddr(0, true))
	fmt.Fprintf(stdout, "fault: drop on %s (SYNs go unanswered)\n", v6)
	fmt.Fprintf(stdout, "client: grpc-go, default pick_first, addresses [%s, %s]\n\n", v6, v4)

	states, rpcErr := demoChannel(ctx, l, []netip.AddrPort{v6, v4}, *budget)
	rows := states
	for _, e := range l.Events() {
		rows = append(rows, timelineRow{e.T, e.String()[12:]})
	}
	slices.SortStableFunc(rows, func(a, b timelineRow) int { return int(a.t - b.t) })
	for _, r := range rows {
		fmt.Fprintf(stdout, "%+11.3fms  %s\n", float64(r.t)/1e6, r.text)
	}
	if rpcErr != nil {
		return fmt.Errorf("lab demo: the RPC failed: %w", rpcErr)
	}
	return summarizeDemo(stdout, l.Events(), v6, v4)
}

// demoChannel connects a default grpc-go channel to addrs through the lab,
// sends one wait-for-ready RPC, and returns the channel's state changes.
func demoChannel(ctx context.Context, l *netlab.Lab, addrs []netip.AddrPort, budget time.Duration) ([]timelineRow, error) {
	r := manual.NewBuilderWithScheme("lab")
	var st resolver.State
	for _, ap := range addrs {
		st.Addresses = append(st.Addresses, resolver.Address{Addr: ap.String()})
	}
	r.InitialState(st)
	cc, err := grpc.NewClient("lab:///b1", grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(l.GRPCDialer()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	rows := make(chan []timelineRow, 1)
	go func() { rows <- watchStates(ctx, l, cc) }()
	cc.Connect()
	name, err := netlab.CallName(ctx, cc, grpc.WaitForReady(true))
	end := l.Now()
	cc.Close() // ends watchStates
	out := <-rows
	if err == nil {
		out = append(out, timelineRow{end, fmt.Sprintf("rpc-result   %s answered %s", name, netlab.NameMethod)})
	}
	return out, err
}

func watchStates(ctx context.Context, l *netlab.Lab, cc *grpc.ClientConn) []timelineRow {
	var rows []timelineRow
	s := cc.GetState()
	for s != connectivity.Shutdown {
		rows = append(rows, timelineRow{l.Now(), "channel      " + s.String()})
		if !cc.WaitForStateChange(ctx, s) {
			break
		}
		s = cc.GetState()
	}
	return rows
}

func summarizeDemo(w io.Writer, events []netlab.Event, first, second netip.AddrPort) error {
	var t1, t2 time.Duration = -1, -1
	for _, e := range events {
		if e.Kind != netlab.EventSYN || e.Retransmit {
			continue
		}
		if e.Addr == first && t1 < 0 {
			t1 = e.T
		}
		if e.Addr == second && t2 < 0 {
			t2 = e.T
		}
	}
	if t1 < 0 || t2 < 0 {
		return fmt.Errorf("lab demo: the capture missed a SYN (to %s: %v, to %s: %v)", first, t1 >= 0, second, t2 >= 0)
	}
	fmt.Fprintf(w, "\n%s\n", strings.Repeat("─", 72))
	fmt.Fprintf(w, "The IPv4 SYN followed the unanswered IPv6 SYN by %.1f ms\n", float64(t2-t1)/1e6)
	fmt.Fprintf(w, "(A61, Happy Eyeballs in the pick_first LB Policy: Connection Attempt Delay, 250 ms by default).\n")
	return nil
}
