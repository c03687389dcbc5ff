package requirement

import (
	"fmt"
	"os"
	"testing"
)

// TestMain validates the embedded catalogue before any test runs, so a
// broken entry fails the package with its catalogue.yaml:line problems
// instead of a panic from the first test that calls All.
func TestMain(m *testing.M) {
	if _, err := Parse(FileName, catalogueYAML); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: embedded catalogue is invalid:\n%v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
