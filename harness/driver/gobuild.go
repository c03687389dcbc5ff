package driver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/conformlab/conform/drivers"
)

// goSource is drivers/go, embedded (package drivers) so that conform
// builds the Go driver from any directory.
var goSource = drivers.Go

const (
	goDriverModule = "github.com/conformlab/conform/drivers/go"
	grpcModule     = "google.golang.org/grpc"
	conformModule  = "github.com/conformlab/conform"
	// endpointsSince is the first grpc-go with resolver.State.Endpoints;
	// older ones get the driver's conform_legacy build (flat addresses).
	endpointsSince = "v1.58.0"
	// xdsSince is the oldest grpc-go the Go driver's xDS build
	// (drivers/go/xds.go, build tag conform_xds) is made for: the oldest
	// checked to build with today's toolchain and to run conform's xDS
	// scenarios (bootstrap from GRPC_XDS_BOOTSTRAP_CONFIG, xds:/// targets).
	xdsSince = "v1.55.0"
	// ringhashSince is the first grpc-go with ring_hash as a public
	// package (balancer/ringhash), which the Go driver's plain build
	// imports (drivers/go/ringhash.go, build tag conform_ringhash) so that
	// ring_hash_experimental can be named in a service config without xDS.
	ringhashSince = "v1.73.0"
	// ringhashFile is that import's file in the driver's module.
	ringhashFile = "ringhash.go"
)

func init() {
	Register(GRPCGo, InstallerFunc(installGo))
	Register(Reference, InstallerFunc(installReference))
}

// CacheDir is where conform keeps what it builds and installs:
// $CONFORM_CACHE, else $XDG_CACHE_HOME/conform, else ~/.cache/conform.
func CacheDir() (string, error) {
	if d := os.Getenv("CONFORM_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set CONFORM_CACHE): %w", err)
	}
	return filepath.Join(d, "conform"), nil
}

// installGo builds the Go driver against one grpc-go version, once per
// version, variant (plain or xDS) and driver source. The xDS variant
// (env.XDS) is built only for grpc-go from xdsSince on; older versions get
// the plain driver, which says it cannot express xDS.
func installGo(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	xds := env.XDS && hasXDS(impl.Version)
	variant := "grpc-go"
	if xds {
		variant = "grpc-go-xds"
	} else if env.XDS {
		env.Logger.Info("no xDS build of the Go driver for this grpc-go", "grpc-go", impl.Version, "oldest", xdsSince)
	}
	key := fmt.Sprintf("%s@%s-%s", variant, impl.Version, embeddedHash()[:12])
	bin := filepath.Join(env.Cache, "drivers", "go", key, "driver")
	if _, err := os.Stat(bin); err == nil {
		return Command{Path: bin}, nil
	}
	env.Logger.Info("building the Go driver", "grpc-go", impl.Version, "xds", xds, "into", bin)
	err := buildInto(ctx, env.Cache, bin, func(dir string) (string, []string, error) {
		return dir, buildTags(impl.Version, xds), prepareGRPCGo(ctx, dir, impl.Version)
	})
	if err != nil {
		return Command{}, fmt.Errorf("building the Go driver for grpc-go %s: %w", impl.Version, err)
	}
	return Command{Path: bin}, nil
}

// installReference builds the Go driver's reference variant, which links
// conform's source tree (env.Source) and so is rebuilt when that changes.
func installReference(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	if env.Source == "" {
		return Command{}, errors.New("reference: the reference driver links conform's source: run from inside conform's source tree or give its directory")
	}
	srcHash, err := treeHash(env.Source)
	if err != nil {
		return Command{}, fmt.Errorf("reference: hashing conform's source %s: %w", env.Source, err)
	}
	key := fmt.Sprintf("reference-%s", srcHash[:12])
	bin := filepath.Join(env.Cache, "drivers", "go", key, "driver")
	if _, err := os.Stat(bin); err == nil {
		return Command{Path: bin}, nil
	}
	env.Logger.Info("building the reference driver", "source", env.Source, "into", bin)
	if err := buildReference(ctx, env.Source, bin); err != nil {
		return Command{}, fmt.Errorf("building the reference driver: %w", err)
	}
	return Command{Path: bin}, nil
}

// buildReference builds drivers/go/reference, a package of conform's own
// module, in conform's source tree (never changing its go.mod), and moves
// the binary to bin atomically.
func buildReference(ctx context.Context, source, bin string) error {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	out := bin + ".tmp"
	defer os.Remove(out)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./drivers/go/reference")
	cmd.Dir = source
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./drivers/go/reference: %v\n%s", err, tail(b, 4096))
	}
	return os.Rename(out, bin)
}

// buildTags are the Go driver's build flags for a grpc-go version:
// conform_legacy before endpointsSince, conform_xds for the xDS variant.
func buildTags(version string, xds bool) []string {
	var tags []string
	if semver.Compare(version, endpointsSince) < 0 {
		tags = append(tags, "conform_legacy")
	}
	if xds {
		tags = append(tags, "conform_xds")
	}
	if semver.Compare(version, ringhashSince) >= 0 {
		tags = append(tags, "conform_ringhash")
	}
	if len(tags) == 0 {
		return nil
	}
	return []string{"-tags", strings.Join(tags, ",")}
}

// hasXDS reports whether the Go driver has an xDS build for version.
func hasXDS(version string) bool { return semver.Compare(version, xdsSince) >= 0 }

// buildInto writes the embedded driver source to a temporary directory
// under cache, lets prepare adjust it (it returns the package directory to
// build and extra build flags), tidies that module, builds it and moves the
// binary to bin atomically. The temporary directory is always removed, and
// bin's directory is made only for a binary that was built.
func buildInto(ctx context.Context, cache, bin string, prepare func(dir string) (pkgDir string, flags []string, err error)) error {
	var flags []string
	return buildIn(ctx, cache, bin, func(dir string) (string, error) {
		pkgDir, f, err := prepare(dir)
		flags = f
		return pkgDir, err
	}, func(string) ([]string, error) { return flags, nil })
}

// buildDriver is buildInto for the driver module at the top of the
// source, whose build flags are known only once it is tidied (flags
// reads them from the tidied module).
func buildDriver(ctx context.Context, cache, bin string, prepare func(dir string) error, flags func(dir string) ([]string, error)) error {
	return buildIn(ctx, cache, bin, func(dir string) (string, error) { return dir, prepare(dir) }, flags)
}

// buildIn is buildInto with the build flags asked for after tidying; the
// build command is "go build" unless command says another ("test", "-c").
func buildIn(ctx context.Context, cache, bin string, prepare func(dir string) (string, error), flagsOf func(pkgDir string) ([]string, error), command ...string) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(cache, "build-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := writeEmbedded(tmp); err != nil {
		return err
	}
	pkgDir, err := prepare(tmp)
	if err != nil {
		return err
	}
	if err := goCmd(ctx, pkgDir, "mod", "tidy"); err != nil {
		return err
	}
	flags, err := flagsOf(pkgDir)
	if err != nil {
		return err
	}
	out := filepath.Join(tmp, "driver.bin")
	if len(command) == 0 {
		command = []string{"build"}
	}
	args := append(append(command, "-o", out), flags...)
	if err := goCmd(ctx, pkgDir, append(args, ".")...); err != nil {
		return err
	}
	// The binary's directory is made only now, so that a failed build
	// (a version the proxy lacks) leaves no empty directory in the cache.
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	return os.Rename(out, bin)
}

// prepareGRPCGo points the driver module at one grpc-go version, with that
// version's own dependencies (a fresh go.mod), after checking the module
// proxy has it.
func prepareGRPCGo(ctx context.Context, dir, version string) error {
	if err := checkModuleExists(ctx, dir, grpcModule+"@"+version); err != nil {
		return err
	}
	os.Remove(filepath.Join(dir, "go.sum"))
	if semver.Compare(version, ringhashSince) < 0 {
		// go mod tidy reads every file whatever its build tags, and would
		// raise grpc-go to a version that has balancer/ringhash.
		if err := os.Remove(filepath.Join(dir, ringhashFile)); err != nil {
			return err
		}
	}
	gomod := fmt.Sprintf("module %s\n\ngo 1.22\n", goDriverModule)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	return goCmd(ctx, dir, "mod", "edit", "-require", grpcModule+"@"+version)
}

// checkModuleExists asks the module proxy (through go mod download) for
// mod@version, so that a version that does not exist is reported as such.
func checkModuleExists(ctx context.Context, dir, modVersion string) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", modVersion)
	cmd.Dir, cmd.Env = dir, goEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct{ Error string }
	if json.Unmarshal(stdout.Bytes(), &info) == nil && info.Error != "" {
		return fmt.Errorf("%s is not available from the module proxy (GOPROXY=%s): %s", modVersion, goProxy(), info.Error)
	}
	if runErr != nil {
		return fmt.Errorf("go mod download %s: %v: %s", modVersion, runErr, tail(stderr.Bytes(), 2048))
	}
	return nil
}

func goProxy() string {
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// goCmd runs the go command in dir; its error carries the output's tail.
func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, goEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, tail(out, 4096))
	}
	return nil
}

// goEnv is the go command's environment for driver builds: module mode
// outside any workspace, the local toolchain, updates to go.mod allowed.
func goEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
}

// writeEmbedded writes the embedded driver source under dir, with its
// go.mod back under its name. The reference variant is left out: it is a
// package of conform's own module (see buildReference).
func writeEmbedded(dir string) error {
	return fs.WalkDir(goSource, "go", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == "go/reference" {
			return fs.SkipDir
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "go"), "/")
		if path.Base(rel) == "go.mod.txt" {
			rel = strings.TrimSuffix(rel, ".txt")
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := goSource.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// embeddedHash identifies the embedded driver source.
func embeddedHash() string {
	h := sha256.New()
	_ = fs.WalkDir(goSource, "go", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := goSource.ReadFile(p)
			fmt.Fprintf(h, "%s %d\n", p, len(b))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// treeHash identifies a Go source tree: its go.mod, go.sum and .go files,
// skipping nested modules, hidden and testdata directories.
func treeHash(root string) (string, error) { return hashTree(root, false) }

// contentHash is treeHash by the files' paths relative to root: the same
// sources anywhere have the same hash.
func contentHash(root string) (string, error) { return hashTree(root, true) }

func hashTree(root string, relative bool) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || isModule(p)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && name != "go.mod" && name != "go.sum" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		name = p
		if relative {
			name, _ = filepath.Rel(root, p)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// tail is the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// FindSource is conform's source tree if the working directory is inside
// it, else "".
func FindSource() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for ; ; dir = filepath.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module "+conformModule+"\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}
