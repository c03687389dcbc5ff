// Command badtraces writes the known-bad traces under traces/bad/ and their
// index: for every check of the suites, the mutation of its golden trace on
// which it fails
// (suites/internal/badtrace). It prints the checks it found none for: each
// must be in traces/bad/MISSING.md, with the reason.
//
//	go run ./suites/internal/badtrace/cmd/badtraces [-traces DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/conformlab/conform/suites/internal/badtrace"
	"github.com/conformlab/conform/suites/spec"
)

func main() {
	dir := flag.String("traces", "", "the traces directory; default: traces/ of the enclosing checkout")
	flag.Parse()
	if *dir == "" {
		d, err := spec.TracesDir()
		if err != nil {
			fail(err)
		}
		*dir = d
	}
	res, err := badtrace.Generate(*dir, badtrace.Specs())
	if err != nil {
		fail(err)
	}
	fmt.Printf("%d bad traces written under %s\n", len(res.Found), filepath.Join(*dir, "bad"))
	for _, f := range res.Found {
		if len(f.Collateral) > 0 {
			fmt.Printf("  %s: %s also fails %v\n", f.Check.Key(), f.Mutation.ID, f.Collateral)
		}
	}
	if len(res.Missing) > 0 {
		fmt.Printf("%d checks without a bad trace (each belongs in MISSING.md, with the reason):\n", len(res.Missing))
		for _, c := range res.Missing {
			fmt.Printf("  %s\n", c.Key())
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "badtraces:", err)
	os.Exit(1)
}
