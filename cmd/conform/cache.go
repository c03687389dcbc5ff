package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/conformlab/conform/harness/driver"
)

const cacheUsage = `Usage:
  conform cache [path]
      Prints the cache directory: where conform builds and installs the
      drivers (grpc-go per version, grpc-js from npm, the grpc-java driver
      compiled per libgrpc-java version) — $CONFORM_CACHE, else
      ~/.cache/conform — and what it holds.

  conform cache clean
      Removes everything in it; the next verify builds and installs again.
`

func runCache(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, cacheUsage)
		return nil
	}
	dir, err := driver.CacheDir()
	if err != nil {
		return err
	}
	switch {
	case len(args) == 0 || args[0] == "path":
		return listCache(dir, stdout)
	case args[0] == "clean" && len(args) == 1:
		return cleanCache(dir, stdout)
	}
	fmt.Fprint(stderr, cacheUsage)
	return badUsage("cache: unknown subcommand %q (want path or clean)", args[0])
}

// listCache prints dir and its entries.
func listCache(dir string, w io.Writer) error {
	fmt.Fprintln(w, dir)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		fmt.Fprintf(w, "  %s\n", e.Name())
	}
	return nil
}

// cleanCache removes dir's entries, and says how many.
func cleanCache(dir string, w io.Writer) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		fmt.Fprintf(w, "%s: nothing to remove\n", dir)
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%s: removed %d entries\n", dir, len(entries))
	return nil
}
