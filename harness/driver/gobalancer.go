package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/conformlab/conform/drivers/go/protocol"
)

// A user's own Go balancer (--impl go:<module>@<version>, go:<dir>) is
// judged through the Go driver built with the user's module linked in: the
// module is required (a replace for a directory) and imported for its
// side effect, its policies' registration; the grpc-go it runs on is the
// one the module requires (go mod tidy: minimal version selection). The
// build is cached like grpc-go's, keyed by the module's version, or for a
// directory by a hash of its sources.

// balancerFile is the generated file of a user's balancer build.
const balancerFile = "userbalancer.go"

func init() { Register(GoBalancer, InstallerFunc(installGoBalancer)) }

// parseGoBalancer parses what follows "go:" in arg: a module path and
// version ("example.com/acme@v1.2.3"), or a local directory ("./acme",
// "/src/acme": a path starting with ".", "/" or "~" is a directory).
func parseGoBalancer(arg, rest string) (Release, error) {
	want := "want go:<module>@<version> (go:example.com/acme@v1.2.3) or go:<dir> (go:./examples/acme-pickfirst)"
	if rest == "" {
		return Release{}, fmt.Errorf("impl %q: name your balancer's module: %s", arg, want)
	}
	if isDirArg(rest) {
		return Release{Name: GoBalancer, Module: rest}, nil
	}
	mod, version, ok := strings.Cut(rest, "@")
	if !ok || version == "" {
		return Release{}, fmt.Errorf("impl %q: say which version of %s (a directory starts with ./ or /): %s", arg, mod, want)
	}
	if err := module.CheckPath(mod); err != nil {
		return Release{}, fmt.Errorf("impl %q: %v: %s", arg, err, want)
	}
	if !semver.IsValid(version) || module.CanonicalVersion(version) != version {
		return Release{}, fmt.Errorf("impl %q: %q is not a module version (vMAJOR.MINOR.PATCH, or a pseudo-version; builds are cached by version, so not a query such as latest)", arg, version)
	}
	return Release{Name: GoBalancer, Module: mod, Version: version}, nil
}

func isDirArg(s string) bool {
	return strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~")
}

// WithPolicies is r with the policy mapping m and the capabilities the
// user declares for the mapped policies (only a user's Go balancer takes
// them).
func (r Release) WithPolicies(m protocol.PolicyMap, can []string) Release {
	if r.Name == GoBalancer {
		r.Policies, r.Can = m.String(), strings.Join(can, ",")
	}
	return r
}

// BadModuleError says that a user's balancer module cannot be used: a
// directory without a Go module, a module that does not build. Like a
// version that does not exist, it is the user's to fix before any run.
type BadModuleError struct {
	Release Release
	// Problem is what is wrong, on one line; Fix what to do.
	Problem, Fix string
}

func (e *BadModuleError) Error() string {
	return fmt.Sprintf("impl %q: %s; %s", e.Release, e.Problem, e.Fix)
}

// localModule is the absolute directory and module path of a local
// balancer module, or a *BadModuleError.
func localModule(impl Release) (dir, path string, err error) {
	dir, err = filepath.Abs(expandHome(impl.Module))
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		problem := "no go.mod in " + dir
		if _, statErr := os.Stat(dir); statErr != nil {
			problem = "no directory " + dir
		}
		return "", "", &BadModuleError{Release: impl, Problem: problem, Fix: "name the directory of your balancer's Go module (the one with its go.mod)"}
	}
	path = modfile.ModulePath(b)
	if path == "" {
		return "", "", &BadModuleError{Release: impl, Problem: dir + "/go.mod has no module line", Fix: "give it one (go mod init example.com/acme)"}
	}
	return dir, path, nil
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// goBalancerPublished checks before any build that a user's module exists:
// its version on the module proxy, or its directory with a go.mod.
func goBalancerPublished(ctx context.Context, impl Release) error {
	if impl.IsLocal() {
		_, _, err := localModule(impl)
		return err
	}
	return modulePublished(ctx, impl, impl.Module)
}

// installGoBalancer builds the Go driver with a user's balancer module,
// once per module version (a directory: per content hash), variant and
// driver source, and returns it with the policy mapping in its
// environment.
func installGoBalancer(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	mod, key, replace, err := balancerBuildKey(impl)
	if err != nil {
		return Command{}, err
	}
	// With a policy mapping the driver does not run xDS (a mapping cannot
	// reach xDS's policies: protocol.UserBalancer), so it needs no xDS build.
	xds := env.XDS && impl.Policies == ""
	if xds {
		key += "-xds"
	}
	bin := filepath.Join(env.Cache, "drivers", "go-balancer", key, "driver")
	cmd := Command{Path: bin}
	if impl.Policies != "" {
		cmd.Env = []string{protocol.PolicyMapEnv + "=" + impl.Policies}
	}
	if impl.Can != "" {
		cmd.Env = append(cmd.Env, protocol.CanEnv+"="+impl.Can)
	}
	if _, err := os.Stat(bin); err == nil {
		return cmd, nil
	}
	env.Logger.Info("building the Go driver with your balancer", "module", mod, "version", impl.Version, "dir", replace, "xds", xds, "into", bin)
	var scratch string // where go ran: its messages' relative paths start there
	err = buildDriver(ctx, env.Cache, bin, func(dir string) error {
		scratch = dir
		return prepareBalancer(ctx, dir, mod, impl.Version, replace)
	}, func(dir string) ([]string, error) {
		return balancerFlags(ctx, dir, xds)
	})
	if err != nil {
		return Command{}, buildFailure(impl, err, scratch)
	}
	return cmd, nil
}

// balancerBuildKey is the user's module path, the build's cache key, and
// for a directory its absolute path (the replace).
func balancerBuildKey(impl Release) (mod, key, replace string, err error) {
	if !impl.IsLocal() {
		return impl.Module, fmt.Sprintf("%s@%s-%s", FileSafe(impl.Module), impl.Version, embeddedHash()[:12]), "", nil
	}
	dir, mod, err := localModule(impl)
	if err != nil {
		return "", "", "", err
	}
	h, err := contentHash(dir)
	if err != nil {
		return "", "", "", fmt.Errorf("impl %q: hashing %s: %w", impl, dir, err)
	}
	return mod, fmt.Sprintf("%s@local-%s-%s", FileSafe(mod), h[:12], embeddedHash()[:12]), dir, nil
}

// FileSafe is name with the characters a file name should not have ("@",
// "/", spaces, ":") replaced by "-".
func FileSafe(name string) string {
	return strings.NewReplacer("@", "-", "/", "-", " ", "-", ":", "-").Replace(name)
}

// prepareBalancer gives the driver module a fresh go.mod requiring the
// user's module (replaced by its directory, if local) and a file importing
// it. grpc-go is left to go mod tidy, which takes the version the user's
// module requires. ringhash.go is set aside: tidy reads every file whatever
// its build tags and would raise grpc-go to one with balancer/ringhash
// (balancerFlags puts it back where the grpc-go chosen has it).
func prepareBalancer(ctx context.Context, dir, mod, version, replace string) error {
	os.Remove(filepath.Join(dir, "go.sum"))
	if err := os.Rename(filepath.Join(dir, ringhashFile), filepath.Join(dir, ringhashFile+".aside")); err != nil {
		return err
	}
	if err := writeUserGoMod(ctx, dir, goDriverModule, "1.22", nil, mod, version, replace); err != nil {
		return err
	}
	src := fmt.Sprintf("// Code generated by conform for --impl go:%s. DO NOT EDIT.\n\npackage main\n\n"+
		"// The user's balancer module, imported for its policies' registration.\nimport _ %q\n\n"+
		"func init() { balancerModule = %q }\n", mod, mod, mod)
	return os.WriteFile(filepath.Join(dir, balancerFile), []byte(src), 0o644)
}

// balancerFlags are the build flags for the grpc-go the tidied module
// chose; ringhash.go is put back where that grpc-go has balancer/ringhash.
func balancerFlags(ctx context.Context, dir string, xds bool) ([]string, error) {
	v, err := selectedGRPC(ctx, dir)
	if err != nil {
		return nil, err
	}
	if semver.Compare(v, ringhashSince) >= 0 {
		if err := os.Rename(filepath.Join(dir, ringhashFile+".aside"), filepath.Join(dir, ringhashFile)); err != nil {
			return nil, err
		}
	}
	return buildTags(v, xds && hasXDS(v)), nil
}

// selectedGRPC is the grpc-go version the module in dir builds with.
func selectedGRPC(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", grpcModule)
	cmd.Dir, cmd.Env = dir, goEnv()
	out, err := cmd.CombinedOutput()
	v := strings.TrimSpace(string(out))
	if err != nil || !semver.IsValid(v) {
		return "", fmt.Errorf("which grpc-go: go list -m %s: %v %s", grpcModule, err, oneLine(string(out)))
	}
	return v, nil
}

// buildFailure is a failed build of a user's balancer as a
// *BadModuleError: the first line of the go command's complaint (run in
// dir), and what to do.
func buildFailure(impl Release, err error, dir string) error {
	var bm *BadModuleError
	if errors.As(err, &bm) {
		return err
	}
	return &BadModuleError{Release: impl, Problem: "the Go driver does not build with it: " + firstComplaint(err.Error(), dir),
		Fix: "fix the module (`go build ./...` in it shows the same), or name another version; nothing was cached"}
}

// firstComplaint is the first line of a go command's output that says
// what is wrong: a compiler's file:line: message (its file made absolute
// from dir, where go ran, which is gone), or go's own.
func firstComplaint(out, dir string) string {
	lines := strings.Split(out, "\n")
	for _, l := range lines[1:] { // lines[0] is "go build …: exit status 1"
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if file, rest, ok := strings.Cut(l, ":"); ok && dir != "" && strings.HasPrefix(file, ".") && strings.HasSuffix(file, ".go") {
			l = filepath.Join(dir, file) + ":" + rest
		}
		return l
	}
	return oneLine(lines[0])
}

// CheckGoBalancer starts a user's balancer's driver (cmd, from Install)
// with no commands: it ends at once, with an error when its policy mapping
// names a policy the build has not registered (a *BadModuleError with the
// driver's words). The driver opens nothing: it reads its empty input and
// exits, in a network namespace of its own (Isolate).
func CheckGoBalancer(ctx context.Context, impl Release, cmd Command) error {
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args...)
	c.Env = append(os.Environ(), cmd.Env...)
	Isolate(c)
	out, err := c.CombinedOutput()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		msg := strings.TrimPrefix(lastLines(string(out), 1), "conform driver: ")
		return &BadModuleError{Release: impl, Problem: msg, Fix: "map onto a policy it registers (--policy pick_first=<its name>)"}
	}
	return fmt.Errorf("%s: the driver did not start: %v %s", impl, err, oneLine(string(out)))
}

// writeUserGoMod writes dir's go.mod for module (at Go version goVersion)
// and has it require the user's module mod: at version, or, from a local
// directory (replace), through a replace. edits are further `go mod edit`
// flags to apply with it.
func writeUserGoMod(ctx context.Context, dir, module, goVersion string, edits []string, mod, version, replace string) error {
	gomod := fmt.Sprintf("module %s\n\ngo %s\n", module, goVersion)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	args := append([]string{"mod", "edit"}, edits...)
	if replace != "" {
		args = append(args, "-require", mod+"@v0.0.0", "-replace", mod+"="+replace)
	} else {
		args = append(args, "-require", mod+"@"+version)
	}
	return goCmd(ctx, dir, args...)
}
