package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/conformlab/conform/drivers/python"
)

func init() { Register(GRPCIO, InstallerFunc(installPython)) }

// installPython checks that the system's python3 has grpcio (a Debian
// package conform cannot install into its cache: the error says what to
// run), that it is the version asked for, if any, and writes driver.py into
// the cache.
func installPython(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	have, err := python.Check(ctx)
	if err != nil {
		return Command{}, err
	}
	if impl.Version != "" && impl.Version != have {
		return Command{}, fmt.Errorf("%s: the system's grpcio is %s (Debian's python3-grpcio); conform cannot install another version", impl, have)
	}
	sum := sha256.Sum256(python.Script)
	path := filepath.Join(env.Cache, "drivers", "python", hex.EncodeToString(sum[:])[:12], "driver.py")
	if _, err := os.Stat(path); err != nil {
		if err := writeFileAtomic(path, python.Script); err != nil {
			return Command{}, fmt.Errorf("grpcio: writing the driver: %w", err)
		}
	}
	return Command{Path: python.Interpreter, Args: []string{path}}, nil
}

// writeFileAtomic writes b to path through a temporary file in its directory.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
