package driver

import (
	"strings"
	"testing"
)

// TestParseRelease_SpecsAndErrors verifies the spec forms conform accepts and
// that a bad one is refused with the reason.
func TestParseRelease_SpecsAndErrors(t *testing.T) {
	for spec, want := range map[string]Release{
		"grpc-go@v1.85.0": {GRPCGo, "v1.85.0"}, "grpc-go@v1.55.0": {GRPCGo, "v1.55.0"},
		"reference": {Reference, ""}, "grpc-js@1.14.7": {GRPCJS, "1.14.7"}, "grpcio": {GRPCIO, ""},
		"grpc-java": {GRPCJava, ""}, "grpc-java@1.41.3": {GRPCJava, "1.41.3"},
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
	} {
		if _, err := ParseRelease(spec); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("ParseRelease(%q) error = %v, want %q", spec, err, reason)
		}
	}
}
