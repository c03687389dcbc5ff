package driver

import (
	"strings"
	"testing"
)

// TestXDS_BuildTags checks the Go driver's build tags and xDS floor.
func TestXDS_BuildTags(t *testing.T) {
	for _, c := range []struct {
		version string
		xds     bool
		want    string
	}{
		{"v1.85.0", false, "-tags conform_ringhash"},
		{"v1.85.0", true, "-tags conform_xds,conform_ringhash"},
		{"v1.73.0", false, "-tags conform_ringhash"},
		{"v1.72.0", false, ""},
		{"v1.55.0", true, "-tags conform_legacy,conform_xds"},
		{"v1.55.0", false, "-tags conform_legacy"},
	} {
		if got := strings.Join(buildTags(c.version, c.xds), " "); got != c.want {
			t.Errorf("buildTags(%s, %v) = %q, want %q", c.version, c.xds, got, c.want)
		}
	}
	if !hasXDS("v1.55.0") || !hasXDS("v1.85.0") || hasXDS("v1.54.1") {
		t.Errorf("hasXDS: want v1.55.0 and v1.85.0 only")
	}
}
