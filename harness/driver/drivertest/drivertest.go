// Package drivertest helps tests stand in for a driver process.
package drivertest

import (
	"os"
	"path/filepath"
	"testing"
)

// Script writes a shell script standing in for a driver, removed with the
// test's temporary directory, and returns its path.
func Script(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "driver.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
