package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// A range names the releases of one implementation between two of them,
// both included: "grpc-go@v1.55.0..v1.85.0", "grpc-js@1.8.0..1.14.7".
// Expanded, it is the latest patch of each minor release in it (the end
// itself for the last minor), or every release with EveryPatch.
const rangeSep = ".."

// IsRange reports whether arg names a range of releases ("name@A..B").
func IsRange(arg string) bool {
	_, v, ok := strings.Cut(arg, "@")
	return ok && strings.Contains(v, rangeSep)
}

// BadRange is a range that names no releases: its syntax, an end that is
// not a release, or ends in the wrong order. (A failure to list the
// releases is not one.)
type BadRange struct{ Err error }

func (e *BadRange) Error() string { return e.Err.Error() }
func (e *BadRange) Unwrap() error { return e.Err }

// Lister gives the released versions of an implementation, in any order,
// as its ecosystem spells them (pre-releases may be among them).
type Lister func(ctx context.Context, name string) ([]string, error)

// Releases lists the versions the implementation's registry has: the Go
// module proxy for grpc-go (through `go list -m -versions`, which honours
// GOPROXY), npm for grpc-js. Other implementations have no versions.
func Releases(ctx context.Context, name string) ([]string, error) {
	switch name {
	case GRPCGo:
		cmd := exec.CommandContext(ctx, "go", "list", "-m", "-versions", grpcModule)
		cmd.Env = goEnv()
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("listing %s versions from the module proxy (GOPROXY=%s): %v%s", grpcModule, goProxy(), err, stderrOf(err))
		}
		fields := strings.Fields(string(out))
		if len(fields) == 0 {
			return nil, fmt.Errorf("listing %s versions: no output", grpcModule)
		}
		return fields[1:], nil // the first field is the module path
	case GRPCJS:
		cmd := exec.CommandContext(ctx, "npm", "view", "@grpc/grpc-js", "versions", "--json")
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("listing @grpc/grpc-js versions from npm: %v%s", err, stderrOf(err))
		}
		var vs []string
		if err := json.Unmarshal(out, &vs); err != nil {
			return nil, fmt.Errorf("listing @grpc/grpc-js versions from npm: %v", err)
		}
		return vs, nil
	}
	return nil, fmt.Errorf("%s: has no versions to list (only %s and %s do)", name, GRPCGo, GRPCJS)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + tail(ee.Stderr, 1024)
	}
	return ""
}

// ExpandRange expands a range ("grpc-go@v1.55.0..v1.85.0") into its
// releases, oldest first, with the versions list gives: the latest patch
// of each minor in the range (the range's own end for its last minor), or
// every release when everyPatch. Pre-releases are never in it. Each end
// must be a release list knows (else the error names the nearest ones),
// and the first no later than the second.
func ExpandRange(ctx context.Context, arg string, everyPatch bool, list Lister) ([]Release, error) {
	name, span, _ := strings.Cut(arg, "@")
	from, to, ok := strings.Cut(span, rangeSep)
	if !ok || from == "" || to == "" {
		return nil, &BadRange{fmt.Errorf("impl %q: a range is name@FIRST..LAST, e.g. grpc-go@v1.55.0..v1.85.0", arg)}
	}
	for _, v := range []string{from, to} {
		if _, err := ParseRelease(name + "@" + v); err != nil {
			return nil, &BadRange{err}
		}
	}
	if name != GRPCGo && name != GRPCJS {
		return nil, &BadRange{fmt.Errorf("impl %q: only %s and %s have version ranges", arg, GRPCGo, GRPCJS)}
	}
	if CompareVersions(from, to) > 0 {
		return nil, &BadRange{fmt.Errorf("impl %q: the range runs backwards: %s is later than %s (want OLDEST..NEWEST)", arg, from, to)}
	}
	all, err := list(ctx, name)
	if err != nil {
		return nil, err
	}
	versions, err := pickRange(releasesOnly(all), from, to, everyPatch)
	if err != nil {
		return nil, &BadRange{fmt.Errorf("impl %q: %w", arg, err)}
	}
	out := make([]Release, len(versions))
	for i, v := range versions {
		out[i] = Release{Name: name, Version: v}
	}
	return out, nil
}

// CheckRelease says whether r's version is one its registry has released,
// for grpc-go and grpc-js; with the nearest releases when it is not.
// Releases without a version, and other implementations, pass.
func CheckRelease(ctx context.Context, r Release, list Lister) error {
	if r.Version == "" || (r.Name != GRPCGo && r.Name != GRPCJS) {
		return nil
	}
	all, err := list(ctx, r.Name)
	if err != nil {
		return err
	}
	if err := isRelease(releasesOnly(all), r.Version); err != nil {
		return fmt.Errorf("impl %q: %w", r.String(), err)
	}
	return nil
}

// releasesOnly is vs without pre-releases or anything not a semantic
// version, sorted oldest first, each once.
func releasesOnly(vs []string) []string {
	var out []string
	for _, v := range vs {
		if sv := semv(v); semver.IsValid(sv) && semver.Prerelease(sv) == "" && semver.Build(sv) == "" {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, CompareVersions)
	return slices.Compact(out)
}

// CompareVersions orders two versions of one implementation by semantic
// version, with or without their "v" (grpc-js has none).
func CompareVersions(a, b string) int { return semver.Compare(semv(a), semv(b)) }

func semv(v string) string {
	if strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

// isRelease says whether v is in the sorted releases, and if not, which
// releases are nearest.
func isRelease(releases []string, v string) error {
	if slices.Contains(releases, v) {
		return nil
	}
	if len(releases) == 0 {
		return fmt.Errorf("%s is not a release (the registry lists none)", v)
	}
	i, _ := slices.BinarySearchFunc(releases, v, CompareVersions)
	var near []string
	if i > 0 {
		near = append(near, releases[i-1])
	}
	if i < len(releases) {
		near = append(near, releases[i])
	}
	return fmt.Errorf("%s is not a release (nearest: %s; newest: %s)", v, strings.Join(near, ", "), releases[len(releases)-1])
}

// pickRange selects from the sorted releases those from from to to.
func pickRange(releases []string, from, to string, everyPatch bool) ([]string, error) {
	for _, v := range []string{from, to} {
		if err := isRelease(releases, v); err != nil {
			return nil, err
		}
	}
	var in []string
	for _, v := range releases {
		if CompareVersions(v, from) >= 0 && CompareVersions(v, to) <= 0 {
			in = append(in, v)
		}
	}
	if everyPatch {
		return in, nil
	}
	var out []string
	for i, v := range in {
		last := i == len(in)-1
		if last || semver.MajorMinor(semv(in[i+1])) != semver.MajorMinor(semv(v)) {
			out = append(out, v)
		}
	}
	return out, nil
}
