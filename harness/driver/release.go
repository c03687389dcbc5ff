// Package driver is the host side of the driver protocol (PROTOCOL.md: JSON
// lines on stdin and stdout), by which implementations in other processes
// are put under test: it parses the releases a user names (ParseRelease), makes
// their drivers runnable (Installer: the Go driver is built per grpc-go
// version into a cache, grpc-js is installed from npm) and talks to a
// running driver started inside the lab's client namespace (Process).
// Running a scenario through one is harness/runner's (runner.Driver).
package driver

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"golang.org/x/mod/semver"
)

// Release names a release of an implementation, as a user names it on the
// command line ("grpc-go@v1.85.0"): Name is its driver's name ("grpc-go",
// "grpc-js", "grpcio", "reference"), Version the implementation's version
// as its ecosystem spells it ("v1.85.0", "1.14.7"), or "" for the driver's
// default. What runs it is runner.Driver.
type Release struct {
	Name, Version string
	// Module is, for a user's Go balancer (Name GoBalancer), its module
	// path ("example.com/acme", with Version its module version) or its
	// local directory as the user gave it ("./examples/acme-pickfirst",
	// Version "").
	Module string
	// Policies maps the scenarios' standard policies onto the user's
	// balancer's (PolicyMap.String, "pick_first=acme_pick_first"); only a
	// GoBalancer release has one.
	Policies string
	// Can are the capabilities the user declares for the mapped policies
	// (protocol.ParseCan, joined by commas: "shuffle").
	Can string
}

func (r Release) String() string {
	name := r.Name
	if r.Name == GoBalancer {
		name = GoBalancer + ":" + r.Module
	}
	if r.Version != "" {
		name += "@" + r.Version
	}
	switch {
	case r.Policies != "" && r.Can != "":
		name += " [" + r.Policies + "; can " + r.Can + "]"
	case r.Policies != "":
		name += " [" + r.Policies + "]"
	}
	return name
}

// IsLocal reports whether r is a user's Go balancer in a local directory.
func (r Release) IsLocal() bool { return r.Name == GoBalancer && r.Version == "" }

// The implementations conform knows.
const (
	GRPCGo    = "grpc-go"
	GRPCJS    = "grpc-js"
	GRPCIO    = "grpcio"
	GRPCJava  = "grpc-java"
	Reference = "reference"
	// GoBalancer is a user's own Go balancer module, linked into the Go
	// driver: "go:<module>@<version>" or "go:<local dir>" (gobalancer.go).
	GoBalancer = "go"
)

// ParseRelease parses "name@version" ("grpc-go@v1.85.0", "grpc-js@1.14.7",
// "grpcio", "grpc-java@1.41.3", "reference"). grpc-go needs a semantic
// version with its "v", grpc-java one without; the reference takes none (it
// is this conform's).
func ParseRelease(arg string) (Release, error) {
	if rest, ok := strings.CutPrefix(arg, GoBalancer+":"); ok {
		return parseGoBalancer(arg, rest)
	}
	name, version, hasVersion := strings.Cut(arg, "@")
	impl := Release{Name: name, Version: version}
	switch {
	case hasVersion && version == "":
		return Release{}, fmt.Errorf("impl %q: empty version after @", arg)
	case name == Reference && hasVersion:
		return Release{}, fmt.Errorf("impl %q: the reference has no version (it is this conform's)", arg)
	case name == GRPCGo && !hasVersion:
		return Release{}, fmt.Errorf("impl %q: say which grpc-go, e.g. grpc-go@v1.85.0", arg)
	case name == GRPCGo && (!semver.IsValid(version) || semver.Canonical(version) != version):
		return Release{}, fmt.Errorf("impl %q: %q is not a grpc-go module version (vMAJOR.MINOR.PATCH)", arg, version)
	case name == GRPCJava && hasVersion && semver.Canonical("v"+version) != "v"+version:
		return Release{}, fmt.Errorf("impl %q: %q is not a grpc-java version (MAJOR.MINOR.PATCH, as Debian's libgrpc-java installs it)", arg, version)
	case name == Reference, name == GRPCGo, name == GRPCJS, name == GRPCIO, name == GRPCJava:
		return impl, nil
	}
	return Release{}, fmt.Errorf("impl %q: unknown implementation (known: %s)", arg, strings.Join(knownNames(), ", "))
}

func knownNames() []string {
	return []string{GRPCGo, GRPCJS, GRPCIO, GRPCJava, Reference, "go:<module>@<version>", "go:<dir>"}
}

// Command is how to start a driver: a program, its arguments, extra
// environment (added to conform's) and working directory ("" for any).
type Command struct {
	Path string
	Args []string
	Env  []string
	Dir  string
}

// InstallEnv is what an Installer may use.
type InstallEnv struct {
	// Cache is the directory installers keep their work in (CacheDir).
	Cache string
	// Source is conform's source tree (the main module's directory), for
	// drivers that link conform (the reference).
	Source string
	// Logger receives progress ("building grpc-go v1.55.0 driver").
	Logger *slog.Logger
	// XDS asks for a driver that can express xDS (a channel to
	// "xds:///<listener>" reading its bootstrap from the environment), where
	// the implementation has one: the Go driver's conform_xds build. An
	// installer without one returns its usual driver, whose hello then says
	// "xds": false.
	XDS bool
}

// An Installer makes an implementation's driver runnable.
type Installer interface {
	// Install builds or installs what impl's driver needs, keeping its work
	// under env.Cache and reusing it next time, and returns the command that
	// starts the driver. A missing system prerequisite is an error saying
	// exactly what to run.
	Install(ctx context.Context, impl Release, env InstallEnv) (Command, error)
}

// InstallerFunc is an Installer made of a function.
type InstallerFunc func(ctx context.Context, impl Release, env InstallEnv) (Command, error)

// Install calls f.
func (f InstallerFunc) Install(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	return f(ctx, impl, env)
}

var (
	installersMu sync.RWMutex
	installers   = map[string]Installer{}
)

// Register makes in the installer of the implementation called name,
// replacing any earlier one. Drivers register from init.
func Register(name string, in Installer) {
	installersMu.Lock()
	defer installersMu.Unlock()
	installers[name] = in
}

// Install makes impl's driver runnable and returns the command to start it.
func Install(ctx context.Context, impl Release, env InstallEnv) (Command, error) {
	installersMu.RLock()
	in, ok := installers[impl.Name]
	installersMu.RUnlock()
	if !ok {
		var names []string
		for n := range installers {
			names = append(names, n)
		}
		sort.Strings(names)
		return Command{}, fmt.Errorf("%s: no driver installer in this build (have: %s)", impl, strings.Join(names, ", "))
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	return in.Install(ctx, impl, env)
}
