package driver

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseRelease_SpecsAndErrors verifies the spec forms conform accepts and
// that a bad one is refused with the reason.
func TestParseRelease_SpecsAndErrors(t *testing.T) {
	for spec, want := range map[string]Release{
		"grpc-go@v1.85.0": {Name: GRPCGo, Version: "v1.85.0"}, "grpc-go@v1.55.0": {Name: GRPCGo, Version: "v1.55.0"},
		"reference": {Name: Reference}, "grpc-js@1.14.7": {Name: GRPCJS, Version: "1.14.7"}, "grpcio": {Name: GRPCIO},
		"grpc-java": {Name: GRPCJava}, "grpc-java@1.41.3": {Name: GRPCJava, Version: "1.41.3"},
		"go:example.com/acme@v1.2.3":                             {Name: GoBalancer, Module: "example.com/acme", Version: "v1.2.3"},
		"go:example.com/acme@v0.0.0-20260101000000-abcdef123456": {Name: GoBalancer, Module: "example.com/acme", Version: "v0.0.0-20260101000000-abcdef123456"},
		"go:./examples/acme-pickfirst":                           {Name: GoBalancer, Module: "./examples/acme-pickfirst"},
		"go:../acme":                                             {Name: GoBalancer, Module: "../acme"},
		"go:/src/acme@2":                                         {Name: GoBalancer, Module: "/src/acme@2"},
	} {
		got, err := ParseRelease(spec)
		if err != nil || got != want || got.String() != spec {
			t.Errorf("ParseRelease(%q) = %+v, %v; want %+v", spec, got, err, want)
		}
	}
	for spec, reason := range map[string]string{
		"grpc-go": "say which grpc-go", "grpc-go@1.85.0": "not a grpc-go module version", "grpc-go@v1.85": "not a grpc-go module version",
		"reference@v1": "no version", "grpc-js@": "empty version", "grpc-rs@1.0": "unknown implementation",
		"grpc-java@v1.41.3": "not a grpc-java version", "grpc-java@1.41": "not a grpc-java version",
		"go:":                         "name your balancer's module: want go:<module>@<version>",
		"go:example.com/acme":         "say which version of example.com/acme (a directory starts with ./ or /)",
		"go:example.com/acme@":        "say which version",
		"go:example.com/acme@latest":  `"latest" is not a module version`,
		"go:example.com/acme@v1.2":    `"v1.2" is not a module version`,
		"go:Example..com/acme@v1.0.0": "malformed module path",
	} {
		if _, err := ParseRelease(spec); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("ParseRelease(%q) error = %v, want %q", spec, err, reason)
		}
	}
}

// TestInstallGo_UnpublishedVersionLeavesNothing verifies that building the
// Go driver for a grpc-go version the module proxy lacks fails saying so,
// and leaves nothing in the cache: no empty directory for the version.
func TestInstallGo_UnpublishedVersionLeavesNothing(t *testing.T) {
	t.Setenv("GOPROXY", "file://"+t.TempDir()) // a proxy with no module at all
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOSUMDB", "off")
	cache := t.TempDir()
	impl := Release{Name: GRPCGo, Version: "v9.9.9"}
	_, err := Install(context.Background(), impl, InstallEnv{Cache: cache})
	if err == nil || !strings.Contains(err.Error(), "not available from the module proxy") {
		t.Errorf("Install(%s) = %v, want the proxy's refusal", impl, err)
	}
	if err := Published(context.Background(), impl); !IsNotPublished(err) {
		t.Errorf("Published(%s) = %v, want a NotPublishedError", impl, err)
	}
	var left []string
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if p != cache {
			left = append(left, p)
		}
		return err
	})
	if len(left) > 0 {
		t.Errorf("a failed build left %v in the cache", left)
	}
}
