package driver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/conformlab/conform/drivers"
)

// DefaultGRPCJS is the grpc-js version used for "grpc-js" without a version.
const DefaultGRPCJS = "1.14.7"

func init() { Register(GRPCJS, InstallerFunc(installNode)) }

// installNode installs @grpc/grpc-js at impl's version into the cache with
// drivers/node/install.sh (from the npm registry, once per version) and
// returns the command that starts drivers/node/driver.js against it. For
// xDS scenarios (env.XDS) the install is a separate one that adds
// @grpc/grpc-js-xds of the same minor release, which the driver registers.
func installNode(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	version := impl.Version
	if version == "" {
		version = DefaultGRPCJS
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return Command{}, fmt.Errorf("grpc-js: Node.js is not installed (on Debian: apt-get install -y nodejs npm)")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return Command{}, fmt.Errorf("grpc-js: npm is not installed (on Debian: apt-get install -y npm)")
	}
	src, err := writeNodeSource(env.Cache)
	if err != nil {
		return Command{}, fmt.Errorf("grpc-js: writing the driver: %w", err)
	}
	name, args := "grpc-js", []string{filepath.Join(src, "install.sh"), version}
	if env.XDS {
		name = "grpc-js-xds"
	}
	dir := filepath.Join(env.Cache, name+"@"+version)
	args = append(args, dir)
	if env.XDS {
		args = append(args, "xds")
	}
	env.Logger.Info("installing "+name+" (once per version)", "version", version, "into", dir)
	cmd := exec.CommandContext(ctx, "sh", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		return Command{}, fmt.Errorf("grpc-js %s: install.sh: %v: %s%s", version, err, tail(stderr.Bytes(), 2048), out)
	}
	return Command{Path: nodeBin, Args: []string{filepath.Join(src, "driver.js"), "--grpc-js", dir}}, nil
}

// writeNodeSource writes the embedded Node driver under the cache, once per
// content, and returns its directory.
func writeNodeSource(cache string) (string, error) {
	h := sha256.New()
	files := map[string][]byte{}
	err := fs.WalkDir(drivers.Node, "node", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := drivers.Node.ReadFile(p)
		files[path.Base(p)] = b
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "drivers", "node", "src-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".src-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for name, b := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, mode); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(dir); serr != nil { // another run may have won the race
			return "", err
		}
	}
	return dir, nil
}
