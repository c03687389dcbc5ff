package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/conformlab/conform/drivers/java"
)

func init() { Register(GRPCJava, InstallerFunc(installJava)) }

// installJava checks that Debian's grpc-java packages and a JDK are
// installed (system packages conform cannot install into its cache: the
// error says what to run), that grpc-java is the version asked for, if any,
// and compiles Driver.java against their jars into the cache, once per
// libgrpc-java version and driver source, atomically.
func installJava(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	sys, err := java.Check(ctx)
	if err != nil {
		return Command{}, err
	}
	if impl.Version != "" && impl.Version != sys.GRPCVersion() {
		return Command{}, fmt.Errorf("%s: the system's grpc-java is %s (Debian's libgrpc-java %s); conform cannot install another version",
			impl, sys.GRPCVersion(), sys.Version)
	}
	if env.XDS {
		env.Logger.Info("Debian's libgrpc-java has no xDS module: the driver says xds false", "grpc-java", sys.GRPCVersion())
	}
	sum := sha256.Sum256(java.Source)
	dir := filepath.Join(env.Cache, "drivers", "java", fmt.Sprintf("grpc-java@%s-%s", sys.Version, hex.EncodeToString(sum[:])[:12]))
	if _, err := os.Stat(filepath.Join(dir, java.MainClass+".class")); err != nil {
		env.Logger.Info("compiling the grpc-java driver", "libgrpc-java", sys.Version, "into", dir)
		if err := compileJava(ctx, sys, dir); err != nil {
			return Command{}, fmt.Errorf("compiling the grpc-java driver against libgrpc-java %s: %w", sys.Version, err)
		}
	}
	return Command{Path: sys.Java, Args: java.Args(sys, dir), Env: []string{java.WarmUpEnv}}, nil
}

// compileJava compiles Driver.java into dir: into a temporary directory
// beside it first, renamed into place when javac succeeded, so that a
// failed or interrupted compile leaves no entry.
func compileJava(ctx context.Context, sys java.System, dir string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-java-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	classes := filepath.Join(tmp, "classes")
	if err := java.Compile(ctx, sys, classes); err != nil {
		return err
	}
	if err := os.Rename(classes, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, java.MainClass+".class")); serr == nil {
			return nil // another run compiled it first
		}
		return err
	}
	return nil
}
