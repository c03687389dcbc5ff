package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/conformlab/conform/drivers/java"
)

// NotPublishedError says that a release's version does not exist where its
// installer would fetch it (the Go module proxy, the npm registry).
type NotPublishedError struct {
	Release Release
	Where   string // "the Go module proxy (GOPROXY=…)", "the npm registry (…)"
	Detail  string // what the proxy or registry said, on one line
	// Want says what to ask for instead; default: a published version.
	Want string
}

func (e *NotPublishedError) Error() string {
	want := e.Want
	if want == "" {
		want = "want a published version, e.g. " + exampleOf(e.Release.Name)
	}
	return fmt.Sprintf("impl %q: %s has no version %s (%s); %s",
		e.Release, e.Where, e.Release.Version, e.Detail, want)
}

func exampleOf(name string) string {
	if name == GRPCJS {
		return GRPCJS + "@" + DefaultGRPCJS
	}
	return GRPCGo + "@v1.85.0"
}

// Published checks, before anything is built or installed, that impl's
// version exists where its installer fetches it: grpc-go's module version
// from the Go module proxy (`go list -m`, which reads the module cache
// first), grpc-js's from the npm registry (`npm view`), grpc-java's among
// the system's packages (the one libgrpc-java installed). A version that does
// not exist is a *NotPublishedError; any other error means the check could
// not be made (no network, no npm) and says why. Implementations without a
// fetched version (grpcio, the reference) always pass.
func Published(ctx context.Context, impl Release) error {
	switch {
	case impl.Name == GRPCGo && impl.Version != "":
		return goPublished(ctx, impl)
	case impl.Name == GRPCJS && impl.Version != "":
		return npmPublished(ctx, impl)
	case impl.Name == GRPCJava && impl.Version != "":
		return javaInstalled(ctx, impl)
	case impl.Name == GoBalancer:
		return goBalancerPublished(ctx, impl)
	}
	return nil
}

// javaInstalled checks that grpc-java's version is the one Debian's
// libgrpc-java installed: conform runs the system's, and no other.
func javaInstalled(ctx context.Context, impl Release) error {
	sys, err := java.Check(ctx)
	if err != nil {
		return fmt.Errorf("checking %s: %w", impl, err)
	}
	if have := sys.GRPCVersion(); have != impl.Version {
		return &NotPublishedError{Release: impl, Where: "the system (Debian's libgrpc-java, which conform runs as installed)",
			Detail: "it has " + have + ", libgrpc-java " + sys.Version,
			Want:   "say " + GRPCJava + " or " + GRPCJava + "@" + have + ", or install another libgrpc-java"}
	}
	return nil
}

// goPublished asks the go command for grpc-go's module at impl.Version.
func goPublished(ctx context.Context, impl Release) error {
	return modulePublished(ctx, impl, grpcModule)
}

// modulePublished asks the go command for module mod at impl.Version.
func modulePublished(ctx context.Context, impl Release, mod string) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-e", "-json", mod+"@"+impl.Version)
	cmd.Dir, cmd.Env = "/", goEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct {
		Version string
		Error   *struct{ Err string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return fmt.Errorf("checking %s: go list -m %s@%s: %v %s", impl, mod, impl.Version, runErr, oneLine(stderr.String()))
	}
	if info.Error == nil {
		return nil
	}
	detail := oneLine(info.Error.Err)
	if unreachable(detail) {
		return fmt.Errorf("checking %s: the Go module proxy cannot be asked: %s", impl, detail)
	}
	np := &NotPublishedError{Release: impl, Where: "the Go module proxy (GOPROXY=" + goProxy() + ")", Detail: lastClause(detail)}
	if impl.Name == GoBalancer {
		np.Want = "name a version it has (go list -m -versions " + mod + "), or your module's directory (go:./dir)"
	}
	return np
}

// unreachable reports whether a go command error says the proxy was not
// asked or did not answer, rather than that it has no such version.
func unreachable(msg string) bool {
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "i/o timeout", "TLS handshake", "lookup disabled", "network is unreachable", "context deadline"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// npmPublished asks the npm registry (through npm, so that the user's npm
// configuration applies) for @grpc/grpc-js at impl.Version: an exact
// version, a tag or a range that matches at least one version.
func npmPublished(ctx context.Context, impl Release) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("checking %s: npm is not installed (on Debian: apt-get install -y npm)", impl)
	}
	cmd := exec.CommandContext(ctx, "npm", "view", "--json", "@grpc/grpc-js@"+impl.Version, "version")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	out := bytes.TrimSpace(stdout.Bytes())
	var res struct {
		Error *struct{ Code, Summary string }
	}
	if runErr == nil && len(out) > 0 && out[0] != '{' {
		return nil // a version, or a list of the versions a range matches
	}
	if json.Unmarshal(out, &res) == nil && res.Error != nil {
		if res.Error.Code == "E404" {
			return &NotPublishedError{Release: impl, Where: "the npm registry (" + npmRegistry(ctx) + ")", Detail: oneLine(res.Error.Summary)}
		}
		return fmt.Errorf("checking %s: npm view: %s %s", impl, res.Error.Code, oneLine(res.Error.Summary))
	}
	if runErr == nil {
		// npm prints nothing for a range no version matches.
		return &NotPublishedError{Release: impl, Where: "the npm registry (" + npmRegistry(ctx) + ")", Detail: "no version matches"}
	}
	return fmt.Errorf("checking %s: npm view: %v %s", impl, runErr, oneLine(lastLines(stderr.String(), 3)))
}

func npmRegistry(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "npm", "config", "get", "registry").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// lastClause is the part of a go command error after its "module@version: "
// prefix.
func lastClause(s string) string {
	if i := strings.Index(s, ": "); i >= 0 && strings.Contains(s[:i], "@") {
		return s[i+2:]
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// IsNotPublished reports whether err says a version does not exist.
func IsNotPublished(err error) bool {
	var np *NotPublishedError
	return errors.As(err, &np)
}

// IsBadRelease reports whether err says the user named a release that
// cannot be run — a version that does not exist, a balancer module that is
// missing or does not build — rather than that conform could not check.
func IsBadRelease(err error) bool {
	var bm *BadModuleError
	return IsNotPublished(err) || errors.As(err, &bm)
}
