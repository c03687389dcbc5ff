// Package python locates the grpcio driver (driver.py, C-core through
// Debian's python3-grpcio) for the host side: the interpreter to run it with,
// the script itself, and whether grpcio is installed, with the exact command
// that installs it when it is not (a system package: conform cannot install
// it into its cache).
package python

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"strings"
)

// Script is driver.py.
//
//go:embed driver.py
var Script []byte

// Interpreter is the system python, the one python3-grpcio installs into
// (not a pyenv or virtualenv python that may come first on PATH).
const Interpreter = "/usr/bin/python3"

// InstallCommand installs what the driver needs (as root, on Debian).
const InstallCommand = "apt-get update && apt-get install -y python3-grpcio"

// Check reports grpcio's version, or why the driver cannot run, naming the
// command to run.
func Check(ctx context.Context) (version string, err error) {
	cmd := exec.CommandContext(ctx, Interpreter, "-c", "import grpc; print(grpc.__version__)")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // the exception line
		}
		return "", fmt.Errorf("python driver: grpcio is not usable by %s (%v: %s); install it with: %s",
			Interpreter, err, msg, InstallCommand)
	}
	return strings.TrimSpace(string(out)), nil
}

// Command is the command that runs the driver script at path.
func Command(path string) *exec.Cmd { return exec.Command(Interpreter, path) }
